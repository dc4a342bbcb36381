package io.sandboxd.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.JsonReader;
import io.sandboxd.enforcer.ProgramRef;
import io.sandboxd.enforcer.SecretBindings;
import io.sandboxd.enforcer.SecretTarget;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * The daemon's configuration (sandboxd.json). Every field has a safe default, so no file at all is
 * a valid configuration; a file is read strictly: unknown fields, wrong types and bad values are
 * refused with the JSON path, never ignored.
 */
public record DaemonConfig(
    int maxConcurrentUnits,
    long maxUnitMemoryBytes,
    long maxWallMs,
    Exec exec,
    long egressTimeoutMs,
    Optional<Inference> inference,
    Metering metering,
    Limits limits,
    Quotas quotas,
    Map<String, Secret> secrets,
    Compile compile,
    Modules modules,
    Pools pools,
    Io io,
    Environments environments,
    NodePolicy policy,
    Metrics metrics,
    Durable durable,
    Fleet fleet,
    Standing standing,
    Signing signing) {

  public DaemonConfig {
    secrets = java.util.Collections.unmodifiableMap(new TreeMap<>(secrets));
  }

  /** This configuration with {@code p} as its node policy. */
  public DaemonConfig withPolicy(NodePolicy p) {
    return new DaemonConfig(
        maxConcurrentUnits,
        maxUnitMemoryBytes,
        maxWallMs,
        exec,
        egressTimeoutMs,
        inference,
        metering,
        limits,
        quotas,
        secrets,
        compile,
        modules,
        pools,
        io,
        environments,
        p,
        metrics,
        durable,
        fleet,
        standing,
        signing);
  }

  /**
   * The Prometheus metrics endpoint: off unless {@code metrics.listen} names a loopback {@code
   * host:port} (it has no authentication, so it never listens beyond the node).
   */
  public record Metrics(Optional<java.net.InetSocketAddress> listen) {
    public static final Metrics OFF = new Metrics(Optional.empty());

    /**
     * Parses {@code host:port} ({@code [v6]:port} for IPv6): an IP literal in 127.0.0.0/8, {@code
     * ::1}, or {@code localhost}; port 0 picks a free one. Names are never resolved.
     */
    public static java.net.InetSocketAddress parseListen(String spec) {
      String at = "$.metrics.listen";
      int colon = spec.lastIndexOf(':');
      if (colon <= 0 || colon == spec.length() - 1) {
        throw new ConfigException(
            at + ": expected host:port, e.g. 127.0.0.1:9464, got \"" + spec + "\"");
      }
      String host = spec.substring(0, colon);
      String portText = spec.substring(colon + 1);
      int port;
      try {
        port = Integer.parseInt(portText);
      } catch (NumberFormatException e) {
        throw new ConfigException(at + ": port \"" + portText + "\" is not a number", e);
      }
      if (port < 0 || port > 65535) {
        throw new ConfigException(at + ": port " + port + " is out of range 0..65535");
      }
      if (host.startsWith("[") && host.endsWith("]")) {
        host = host.substring(1, host.length() - 1);
      }
      java.net.InetAddress addr;
      if (host.equals("localhost")) {
        addr = java.net.InetAddress.getLoopbackAddress();
      } else if (host.matches("[0-9.]+")
          || (host.contains(":") && host.matches("[0-9a-fA-F:.]+"))) {
        try {
          // A literal: getByName parses it without a lookup.
          addr = java.net.InetAddress.getByName(host);
        } catch (java.net.UnknownHostException e) {
          throw new ConfigException(at + ": \"" + host + "\" is not an IP address", e);
        }
      } else {
        throw new ConfigException(
            at + ": \"" + host + "\" is not an IP literal or localhost (names are not resolved)");
      }
      if (!addr.isLoopbackAddress()) {
        throw new ConfigException(
            at
                + ": "
                + host
                + " is not a loopback address; the metrics endpoint has no authentication"
                + " and only listens on loopback (127.0.0.1, ::1 or localhost)");
      }
      return new java.net.InetSocketAddress(addr, port);
    }
  }

  /**
   * What a WASI command may be given and how much of its output is kept: stdin bytes, argv entries
   * and their total UTF-8 bytes (a submission past these is refused), and the bytes of stdout and
   * of stderr kept per run (past them the stream is cut and the run says so).
   */
  public record Io(
      long stdinMaxBytes,
      long stdoutMaxBytes,
      long stderrMaxBytes,
      int argsMaxCount,
      long argsMaxBytes) {
    /** Most bytes any cap may be: stdin and outputs travel in one gRPC message of 64 MiB. */
    public static final long MAX_CAP = 48L << 20;

    public static Io defaults() {
      return new Io(8L << 20, 1L << 20, 1L << 20, 4096, 1L << 20);
    }
  }

  /**
   * The environments this node offers ({@code environments}: each a name and the devcontainer.json
   * ingested at start) and the host directories their bind mounts may name ({@code bind_allow}).
   */
  public record Environments(List<Offered> offered, List<Path> bindAllow) {
    public Environments {
      offered = List.copyOf(offered);
      bindAllow = List.copyOf(bindAllow);
    }

    public static Environments none() {
      return new Environments(List.of(), List.of());
    }

    /** One offered environment: the name submissions use, the file that declares it. */
    public record Offered(String name, Path devcontainer) {}
  }

  /** Most environments one node offers, and most directories it allows binding. */
  static final int MAX_ENVIRONMENTS = 256;

  static final int MAX_BIND_ALLOW = 256;

  private static final java.util.regex.Pattern ENV_NAME =
      java.util.regex.Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,63}");

  /**
   * One node secret (under {@code secrets} keyed by its handle, e.g. {@code vault:api-key}): where
   * its bytes come from and the only endpoints the operator lets it be sent to.
   */
  public record Secret(SecretSource source, List<SecretTarget> endpoints) {
    public Secret {
      endpoints = List.copyOf(endpoints);
    }
  }

  /** Where a secret's bytes are read, at each use (so a rotated file takes effect at once). */
  public sealed interface SecretSource permits SecretSource.File, SecretSource.Env {
    /** A file; a relative path is under the state directory's {@code secrets/}. */
    record File(Path path) implements SecretSource {}

    /** An environment variable of the daemon. */
    record Env(String name) implements SecretSource {}
  }

  /** Where each configured secret may go, as admission and egress check it. */
  public SecretBindings secretBindings() {
    Map<String, List<SecretTarget>> m = new TreeMap<>();
    secrets.forEach((handle, s) -> m.put(handle, s.endpoints()));
    return new SecretBindings(m);
  }

  /**
   * Module compilation: how many run at once (never more than units may run) and the wall time one
   * may take before its submission is refused: {@code timeoutMs} for a module up to 1 MiB, plus
   * {@code timeoutMsPerMib} for each MiB past it (compile time grows with code size).
   */
  public record Compile(int maxConcurrent, long timeoutMs, long timeoutMsPerMib) {
    public static Compile defaults(int maxConcurrentUnits) {
      return new Compile(Math.min(2, maxConcurrentUnits), 60_000, 120_000);
    }
  }

  /**
   * The module store (units by address): the largest module accepted (stored or submitted), how
   * many modules the node holds at most, and how many compiled machine factories stay cached.
   */
  public record Modules(long maxBytes, long maxModules, int factoryCacheEntries) {
    public static Modules defaults() {
      return new Modules(32L << 20, 4096, 256);
    }
  }

  /**
   * Process control: the node's absolute denylist ({@code b3:<64 hex>}), search path, timeout, and
   * what one exec's process tree may hold at once: processes, and memory of their own (anonymous
   * and shared, resident).
   */
  public record Exec(
      Set<String> denylist,
      List<String> searchPath,
      long timeoutMs,
      int maxProcesses,
      long maxMemoryBytes) {
    /** {@link #maxProcesses} when not configured. */
    public static final int DEFAULT_MAX_PROCESSES = 64;

    /** {@link #maxMemoryBytes} when not configured. */
    public static final long DEFAULT_MAX_MEMORY_BYTES = 512L << 20;

    public Exec {
      denylist = Set.copyOf(denylist);
      searchPath = List.copyOf(searchPath);
    }
  }

  /** The on-host OpenAI-compatible endpoint `infer` forwards to, and the class that serves it. */
  public record Inference(URI endpoint, DeviceClass servingClass) {}

  /**
   * Per-module node quotas: the bytes a module may keep in its storage directory (each entry also
   * costs 4 KiB, holes count) and in the kv store (keys, values and 64 bytes per entry); and the
   * bytes units' writes leave free on each file system they write to, for the node's own records
   * ({@link #DEFAULT_RESERVE}: the smaller of 1 GiB and 5% of the file system; 0: none). The daemon
   * keeps at least what its run store's log takes, whatever is configured here but 0.
   */
  public record Quotas(long storageBytesPerModule, long kvBytesPerModule, long reserveBytes) {
    /** {@link #reserveBytes} when not configured. */
    public static final long DEFAULT_RESERVE = -1;

    /** Per-module quotas, with the default reserve. */
    public Quotas(long storageBytesPerModule, long kvBytesPerModule) {
      this(storageBytesPerModule, kvBytesPerModule, DEFAULT_RESERVE);
    }
  }

  /** Where the meters are and what the estimator assumes. */
  public record Metering(
      Optional<Path> powercapRoot,
      Optional<String> nvmlLibrary,
      long estimatorCpuMilliwatts,
      long samplingIntervalMs) {}

  /**
   * What a socket client or a unit can make the daemon hold: connections, one run's journal, and
   * the run store's bulky data (journals, blobs, logs, module bytes of old runs).
   */
  public record Limits(Connections connections, Journal journal, Store store) {
    public static Limits defaults() {
      return new Limits(
          new Connections(1024, 64, 60_000, 10_000, 3_600_000),
          new Journal(250_000, 64L << 20),
          new Store(1L << 30, 0, 0));
    }
  }

  /**
   * Socket connections: at most {@code maxTotal} open, {@code maxPerPeer} per peer uid; a
   * connection with no call in flight for {@code idleTimeoutMs}, or that has not finished its
   * HTTP/2 handshake in {@code handshakeTimeoutMs}, is closed; none lives past {@code maxAgeMs}.
   */
  public record Connections(
      int maxTotal, int maxPerPeer, long idleTimeoutMs, long handshakeTimeoutMs, long maxAgeMs) {}

  /** One run's replay journal: entries and bytes (entries' canonical JSON plus response blobs). */
  public record Journal(int maxEntries, long maxBytes) {}

  /**
   * Retention of the run store's bulky data: past {@code maxBytes} (and, when not 0, past the
   * newest {@code maxRuns} runs or older than {@code maxAgeMs}) the oldest runs' journals, blobs,
   * logs and module bytes are pruned; their signed records stay. {@code verifyCpuPercent} caps the
   * background store verifier's CPU at that share of one core (it re-checks what the node signed,
   * so it must never compete with runs); {@code verifyIdleCpuPercent} is its share while the node
   * is idle (no submission in flight for {@code IDLE_AFTER_MS}), so that a backlog left by a busy
   * spell is sealed before the next start-up has to check it. {@code sealOnStop}: a graceful stop
   * checks and seals the runs since the checkpoint, so the next start need not check them before it
   * serves; off by default, because a run sealed is no longer refused at start when its row is
   * changed while the daemon is stopped (issue 8), only found by the background pass or {@code
   * store verify}.
   */
  public record Store(
      long maxBytes,
      long maxRuns,
      long maxAgeMs,
      int verifyCpuPercent,
      int verifyIdleCpuPercent,
      boolean sealOnStop) {
    /** The background verifier's default share of one core. */
    public static final int DEFAULT_VERIFY_CPU_PERCENT = 5;

    /** Its default share while the node is idle: a whole core, which no run is waiting for. */
    public static final int DEFAULT_VERIFY_IDLE_CPU_PERCENT = 100;

    /** How long no submission has been in flight before the node counts as idle. */
    public static final long IDLE_AFTER_MS = 500;

    public Store {
      if (verifyIdleCpuPercent < verifyCpuPercent) {
        throw new IllegalArgumentException(
            "verify_idle_cpu_percent ("
                + verifyIdleCpuPercent
                + ") is below verify_cpu_percent ("
                + verifyCpuPercent
                + "): an idle node would verify slower than a busy one");
      }
    }

    public Store(long maxBytes, long maxRuns, long maxAgeMs) {
      this(
          maxBytes,
          maxRuns,
          maxAgeMs,
          DEFAULT_VERIFY_CPU_PERCENT,
          DEFAULT_VERIFY_IDLE_CPU_PERCENT,
          false);
    }
  }

  private static final Set<String> TOP =
      Set.of(
          "max_concurrent_units",
          "max_unit_memory_bytes",
          "max_wall_ms",
          "exec",
          "egress",
          "inference",
          "metering",
          "connections",
          "journal",
          "store",
          "quotas",
          "secrets",
          "compile",
          "modules",
          "pools",
          "pool_limits",
          "io",
          "environments",
          "bind_allow",
          "policy",
          "metrics",
          "durable",
          "fleet",
          "standing",
          "signing");

  /** The embedded default configuration. */
  public static DaemonConfig defaults() {
    int units = Math.max(2, Runtime.getRuntime().availableProcessors());
    return new DaemonConfig(
        units,
        512L << 20,
        600_000,
        new Exec(
            Set.of(),
            List.of("/usr/local/bin", "/usr/bin", "/bin"),
            10_000,
            Exec.DEFAULT_MAX_PROCESSES,
            Exec.DEFAULT_MAX_MEMORY_BYTES),
        30_000,
        Optional.empty(),
        new Metering(Optional.empty(), Optional.empty(), 10_000, 1_000),
        Limits.defaults(),
        new Quotas(1L << 30, 64L << 20),
        Map.of(),
        Compile.defaults(units),
        Modules.defaults(),
        Pools.defaults(),
        Io.defaults(),
        Environments.none(),
        NodePolicy.MODE_DEFAULT,
        Metrics.OFF,
        Durable.defaults(),
        Fleet.defaults(),
        Standing.defaults(),
        Signing.defaults());
  }

  /** Reads {@code file} if given, else the defaults. */
  public static DaemonConfig load(Optional<Path> file) {
    if (file.isEmpty()) {
      return defaults();
    }
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(file.get());
    } catch (IOException e) {
      throw new ConfigException(file.get() + ": cannot read: " + e.getMessage(), e);
    }
    try {
      return parse(bytes);
    } catch (ConfigException e) {
      throw new ConfigException(file.get() + ": " + e.getMessage(), e);
    }
  }

  /** Parses a configuration document; absent fields take their defaults. */
  public static DaemonConfig parse(byte[] json) {
    JsonNode root;
    try {
      root = CanonicalJson.parse(json);
    } catch (AttestException e) {
      throw new ConfigException(e.getMessage(), e);
    }
    JsonReader f = JsonReader.of(root, "$", TOP, ConfigException.FAULT);
    DaemonConfig d = defaults();
    JsonReader exec =
        f.objectOrEmpty(
            "exec",
            Set.of("denylist", "search_path", "timeout_ms", "max_processes", "max_memory_bytes"));
    List<String> deny = exec.strings("denylist", List.of());
    for (int i = 0; i < deny.size(); i++) {
      ProgramRef ref;
      try {
        ref = new ProgramRef(deny.get(i));
      } catch (IllegalArgumentException e) {
        throw new ConfigException("$.exec.denylist[" + i + "]: " + e.getMessage(), e);
      }
      if (!ref.isHash()) {
        throw new ConfigException(
            "$.exec.denylist[" + i + "]: the node denylist holds b3:<64 hex> hashes only");
      }
    }
    List<String> search = exec.strings("search_path", d.exec().searchPath());
    for (int i = 0; i < search.size(); i++) {
      if (!search.get(i).startsWith("/")) {
        throw new ConfigException("$.exec.search_path[" + i + "]: must be an absolute directory");
      }
    }
    JsonReader egress = f.objectOrEmpty("egress", Set.of("timeout_ms"));
    Optional<JsonReader> inferenceFields =
        f.optionalObject("inference", Set.of("endpoint", "class"));
    Optional<Inference> inference = Optional.empty();
    if (inferenceFields.isPresent()) {
      JsonReader inf = inferenceFields.get();
      String ep = inf.string("endpoint", null);
      if (ep == null) {
        throw new ConfigException("$.inference.endpoint: missing");
      }
      URI uri;
      try {
        uri = URI.create(ep);
      } catch (IllegalArgumentException e) {
        throw new ConfigException("$.inference.endpoint: " + e.getMessage(), e);
      }
      if (!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme())) {
        throw new ConfigException("$.inference.endpoint: must be an http(s) URL");
      }
      DeviceClass cls;
      try {
        cls = DeviceClass.fromJson(inf.string("class", "Cpu"));
      } catch (IllegalArgumentException e) {
        throw new ConfigException("$.inference.class: " + e.getMessage(), e);
      }
      inference = Optional.of(new Inference(uri, cls));
    }
    JsonReader m =
        f.objectOrEmpty(
            "metering",
            Set.of("powercap_root", "nvml_library", "estimator_cpu_mw", "sampling_interval_ms"));
    JsonReader q =
        f.objectOrEmpty(
            "quotas", Set.of("storage_bytes_per_module", "kv_bytes_per_module", "reserve_bytes"));
    Map<String, Secret> secrets = secrets(root.get("secrets"));
    int units = (int) f.integer("max_concurrent_units", d.maxConcurrentUnits(), 1, 1024);
    JsonReader compile =
        f.objectOrEmpty("compile", Set.of("max_concurrent", "timeout_ms", "timeout_ms_per_mib"));
    Compile compileDefaults = Compile.defaults(units);
    long compileSlots =
        compile.integer("max_concurrent", compileDefaults.maxConcurrent(), 1, units);
    JsonReader mods =
        f.objectOrEmpty("modules", Set.of("max_bytes", "max_modules", "factory_cache_entries"));
    Modules modDefaults = Modules.defaults();
    Optional<JsonReader> metricsFields = f.optionalObject("metrics", Set.of("listen"));
    Metrics metrics = Metrics.OFF;
    if (metricsFields.isPresent()) {
      String listen = metricsFields.get().string("listen", null);
      if (listen != null) {
        metrics = new Metrics(Optional.of(Metrics.parseListen(listen)));
      }
    }
    return new DaemonConfig(
        units,
        f.integer("max_unit_memory_bytes", d.maxUnitMemoryBytes(), 1, 32767L * 65536),
        f.integer("max_wall_ms", d.maxWallMs(), 1, 7L * 24 * 3600 * 1000),
        new Exec(
            Set.copyOf(deny),
            search,
            exec.integer("timeout_ms", 10_000, 1, 3_600_000),
            (int) exec.integer("max_processes", Exec.DEFAULT_MAX_PROCESSES, 1, 4096),
            exec.integer("max_memory_bytes", Exec.DEFAULT_MAX_MEMORY_BYTES, 1 << 20, 1L << 40)),
        egress.integer("timeout_ms", d.egressTimeoutMs(), 1, 3_600_000),
        inference,
        new Metering(
            Optional.ofNullable(m.string("powercap_root", null)).map(Path::of),
            Optional.ofNullable(m.string("nvml_library", null)),
            m.integer("estimator_cpu_mw", 10_000, 1, 10_000_000),
            m.integer("sampling_interval_ms", 1_000, 1, 60_000)),
        limits(f, d.limits()),
        new Quotas(
            q.integer("storage_bytes_per_module", d.quotas().storageBytesPerModule(), 1, 1L << 50),
            q.integer("kv_bytes_per_module", d.quotas().kvBytesPerModule(), 1, 1L << 40),
            q.integer("reserve_bytes", d.quotas().reserveBytes(), 0, 1L << 50)),
        secrets,
        new Compile(
            (int) compileSlots,
            compile.integer("timeout_ms", compileDefaults.timeoutMs(), 1, 3_600_000),
            compile.integer("timeout_ms_per_mib", compileDefaults.timeoutMsPerMib(), 0, 3_600_000)),
        new Modules(
            // A module travels in one gRPC message of at most 64 MiB.
            mods.integer("max_bytes", modDefaults.maxBytes(), 8, 63L << 20),
            mods.integer("max_modules", modDefaults.maxModules(), 1, 1L << 24),
            (int)
                mods.integer(
                    "factory_cache_entries", modDefaults.factoryCacheEntries(), 1, 1 << 16)),
        Pools.parse(
            root.get("pools"),
            f.objectOrEmpty(
                "pool_limits",
                Set.of("adaptive", "max_idle_bytes", "idle_estimate_mw", "refill_interval_ms"))),
        io(f, d.io()),
        environments(f),
        NodePolicy.parse(root.get("policy"), units),
        metrics,
        Durable.parse(f),
        Fleet.parse(f),
        Standing.parse(f),
        Signing.parse(f));
  }

  private static Io io(JsonReader f, Io d) {
    JsonReader io =
        f.objectOrEmpty(
            "io",
            Set.of(
                "stdin_max_bytes",
                "stdout_max_bytes",
                "stderr_max_bytes",
                "args_max_count",
                "args_max_bytes"));
    return new Io(
        io.integer("stdin_max_bytes", d.stdinMaxBytes(), 0, Io.MAX_CAP),
        io.integer("stdout_max_bytes", d.stdoutMaxBytes(), 0, Io.MAX_CAP),
        io.integer("stderr_max_bytes", d.stderrMaxBytes(), 0, Io.MAX_CAP),
        (int) io.integer("args_max_count", d.argsMaxCount(), 1, 1 << 20),
        io.integer("args_max_bytes", d.argsMaxBytes(), 1, Io.MAX_CAP));
  }

  private static Environments environments(JsonReader f) {
    List<Environments.Offered> offered =
        f.list(
            "environments",
            (n, at) -> {
              JsonReader e =
                  JsonReader.of(n, at, Set.of("name", "devcontainer"), ConfigException.FAULT);
              String name = e.string("name", null);
              if (name == null || !ENV_NAME.matcher(name).matches()) {
                throw new ConfigException(
                    at + ".name: expected [A-Za-z0-9][A-Za-z0-9_.-]*, at most 64 characters");
              }
              String file = e.string("devcontainer", null);
              if (file == null || !file.startsWith("/") || file.indexOf('\0') >= 0) {
                throw new ConfigException(
                    at + ".devcontainer: expected the absolute path of a devcontainer.json");
              }
              return new Environments.Offered(name, Path.of(file));
            });
    if (offered.size() > MAX_ENVIRONMENTS) {
      throw new ConfigException("$.environments: more than " + MAX_ENVIRONMENTS);
    }
    Set<String> names = new java.util.HashSet<>();
    for (int i = 0; i < offered.size(); i++) {
      if (!names.add(offered.get(i).name())) {
        throw new ConfigException(
            "$.environments[" + i + "].name: \"" + offered.get(i).name() + "\" named twice");
      }
    }
    List<String> allow = f.strings("bind_allow", List.of());
    if (allow.size() > MAX_BIND_ALLOW) {
      throw new ConfigException("$.bind_allow: more than " + MAX_BIND_ALLOW);
    }
    List<Path> dirs = new ArrayList<>();
    for (int i = 0; i < allow.size(); i++) {
      String d = allow.get(i);
      if (!d.startsWith("/")
          || d.indexOf('\0') >= 0
          || !Path.of(d).normalize().toString().equals(d)) {
        throw new ConfigException(
            "$.bind_allow[" + i + "]: expected an absolute, normalized directory path");
      }
      dirs.add(Path.of(d));
    }
    return new Environments(offered, dirs);
  }

  private static Limits limits(JsonReader f, Limits d) {
    JsonReader c =
        f.objectOrEmpty(
            "connections",
            Set.of(
                "max_total",
                "max_per_peer",
                "idle_timeout_ms",
                "handshake_timeout_ms",
                "max_age_ms"));
    JsonReader j = f.objectOrEmpty("journal", Set.of("max_entries", "max_bytes"));
    JsonReader s =
        f.objectOrEmpty(
            "store",
            Set.of(
                "max_bytes",
                "max_runs",
                "max_age_ms",
                "verify_cpu_percent",
                "verify_idle_cpu_percent",
                "seal_on_stop"));
    Connections dc = d.connections();
    long day = 24L * 3600 * 1000;
    int verifyCpu = (int) s.integer("verify_cpu_percent", d.store().verifyCpuPercent(), 1, 100);
    int verifyIdleCpu =
        (int) s.integer("verify_idle_cpu_percent", d.store().verifyIdleCpuPercent(), 1, 100);
    if (verifyIdleCpu < verifyCpu) {
      throw new ConfigException(
          "$.store.verify_idle_cpu_percent: "
              + verifyIdleCpu
              + " is below $.store.verify_cpu_percent ("
              + verifyCpu
              + "): an idle node would verify slower than a busy one");
    }
    return new Limits(
        new Connections(
            (int) c.integer("max_total", dc.maxTotal(), 1, 1 << 20),
            (int) c.integer("max_per_peer", dc.maxPerPeer(), 1, 1 << 20),
            c.integer("idle_timeout_ms", dc.idleTimeoutMs(), 1, day),
            c.integer("handshake_timeout_ms", dc.handshakeTimeoutMs(), 1, 3_600_000),
            c.integer("max_age_ms", dc.maxAgeMs(), 1, 365 * day)),
        new Journal(
            (int) j.integer("max_entries", d.journal().maxEntries(), 1, 10_000_000),
            j.integer("max_bytes", d.journal().maxBytes(), 1, 4L << 30)),
        new Store(
            s.integer("max_bytes", d.store().maxBytes(), 1, 1L << 50),
            s.integer("max_runs", d.store().maxRuns(), 1, 1L << 40),
            s.integer("max_age_ms", d.store().maxAgeMs(), 1, 100 * 365 * day),
            verifyCpu,
            verifyIdleCpu,
            s.bool("seal_on_stop", d.store().sealOnStop())));
  }

  /** Most secrets one node configures, and most endpoints one secret is bound to. */
  static final int MAX_SECRETS = 1024;

  static final int MAX_SECRET_ENDPOINTS = 256;

  private static Map<String, Secret> secrets(JsonNode node) {
    Map<String, Secret> out = new TreeMap<>();
    if (node == null || node.isNull()) {
      return out;
    }
    if (!node.isObject()) {
      throw new ConfigException("$.secrets: expected an object from secret handle to binding");
    }
    if (node.size() > MAX_SECRETS) {
      throw new ConfigException("$.secrets: more than " + MAX_SECRETS + " secrets");
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      String handle = e.getKey();
      String at = "$.secrets." + handle;
      if (handle.isEmpty() || !handle.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
        throw new ConfigException(at + ": a secret handle is non-empty printable ASCII");
      }
      JsonReader f =
          JsonReader.of(
              e.getValue(), at, Set.of("file", "env", "endpoints"), ConfigException.FAULT);
      String file = f.string("file", null);
      String env = f.string("env", null);
      if ((file == null) == (env == null)) {
        throw new ConfigException(at + ": give exactly one of \"file\" or \"env\"");
      }
      SecretSource source;
      if (file != null) {
        if (file.isEmpty() || file.indexOf('\0') >= 0) {
          throw new ConfigException(at + ".file: expected a path");
        }
        source = new SecretSource.File(Path.of(file));
      } else {
        if (env.isEmpty() || env.indexOf('=') >= 0 || env.indexOf('\0') >= 0) {
          throw new ConfigException(at + ".env: expected an environment variable name");
        }
        source = new SecretSource.Env(env);
      }
      List<String> specs = f.strings("endpoints", List.of());
      if (specs.isEmpty()) {
        throw new ConfigException(
            at + ".endpoints: bind the secret to at least one http(s)://host[:port]/path");
      }
      if (specs.size() > MAX_SECRET_ENDPOINTS) {
        throw new ConfigException(at + ".endpoints: more than " + MAX_SECRET_ENDPOINTS);
      }
      List<SecretTarget> targets = new ArrayList<>();
      for (int i = 0; i < specs.size(); i++) {
        try {
          targets.add(SecretTarget.parse(specs.get(i)));
        } catch (IllegalArgumentException ex) {
          throw new ConfigException(at + ".endpoints[" + i + "]: " + ex.getMessage(), ex);
        }
      }
      out.put(handle, new Secret(source, targets));
    }
    return out;
  }
}
