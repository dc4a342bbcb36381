package io.sandboxd.daemon;

import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Ed25519Engine;
import io.sandboxd.config.ConfigException;
import io.sandboxd.config.DaemonConfig;
import io.sandboxd.config.Signing;
import io.sandboxd.daemon.durable.BundleTrust;
import io.sandboxd.daemon.durable.DurableRuns;
import io.sandboxd.daemon.durable.StoreRoom;
import io.sandboxd.daemon.fleet.FleetShipping;
import io.sandboxd.daemon.jcp.LiveAmendments;
import io.sandboxd.daemon.jcp.StandingGrants;
import io.sandboxd.daemon.rpc.CallerCredentials;
import io.sandboxd.daemon.rpc.ConnectionLimits;
import io.sandboxd.daemon.rpc.FairCalls;
import io.sandboxd.daemon.rpc.JcpService;
import io.sandboxd.daemon.rpc.NodeStatus;
import io.sandboxd.daemon.rpc.RequestDecoder;
import io.sandboxd.daemon.rpc.RpcAuthorization;
import io.sandboxd.daemon.rpc.SandboxdService;
import io.sandboxd.daemon.run.Accounts;
import io.sandboxd.daemon.run.Admission;
import io.sandboxd.daemon.run.EnvironmentRefusedException;
import io.sandboxd.daemon.run.Launch;
import io.sandboxd.daemon.run.OfferedEnvironments;
import io.sandboxd.daemon.run.PoolWiring;
import io.sandboxd.daemon.run.RecordSealer;
import io.sandboxd.daemon.run.RunIds;
import io.sandboxd.daemon.run.RunPathPrimer;
import io.sandboxd.daemon.run.RunSupervisor;
import io.sandboxd.daemon.run.SubmitterPolicy;
import io.sandboxd.daemon.store.CpuShare;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.daemon.store.StoreDamage;
import io.sandboxd.daemon.store.StoreException;
import io.sandboxd.daemon.store.StoreVerifier;
import io.sandboxd.daemon.store.WalTail;
import io.sandboxd.executor.DiskReserve;
import io.sandboxd.executor.EnergyModel;
import io.sandboxd.executor.EnvironmentMounts;
import io.sandboxd.executor.Executor;
import io.sandboxd.executor.FactoryCache;
import io.sandboxd.executor.HostFaults;
import io.sandboxd.executor.HostServices;
import io.sandboxd.executor.KvStore;
import io.sandboxd.executor.ModuleStore;
import io.sandboxd.executor.SecretStore;
import io.sandboxd.executor.UnitCompiler;
import io.sandboxd.metering.Attribution;
import io.sandboxd.metering.DiscoveredMeters;
import io.sandboxd.metering.EstimatorModel;
import io.sandboxd.metering.MeterDiscovery;
import io.sandboxd.metering.MeteringConfig;
import io.sandboxd.warmpool.WarmPools;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * The daemon process, wired explicitly: identity, store, executor, admission, supervisor and the
 * gRPC server on a Unix socket guarded by a lock file.
 */
public final class Daemon implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(Daemon.class.getName());

  /** Largest gRPC message the daemon accepts (a module and its grants). */
  static final int MAX_INBOUND_BYTES = 64 << 20;

  /** A few settings for tests and embedding; everything else takes the configuration defaults. */
  public record Settings(
      int maxConcurrentUnits, long cpuMilliwattsEstimate, long maxWallMillis, int maxInboundBytes) {
    public static Settings defaults() {
      DaemonConfig d = DaemonConfig.defaults();
      return new Settings(
          d.maxConcurrentUnits(),
          d.metering().estimatorCpuMilliwatts(),
          d.maxWallMs(),
          MAX_INBOUND_BYTES);
    }

    DaemonConfig toConfig() {
      DaemonConfig d = DaemonConfig.defaults();
      return new DaemonConfig(
          maxConcurrentUnits,
          d.maxUnitMemoryBytes(),
          maxWallMillis,
          d.exec(),
          d.egressTimeoutMs(),
          d.inference(),
          new DaemonConfig.Metering(
              d.metering().powercapRoot(),
              d.metering().nvmlLibrary(),
              cpuMilliwattsEstimate,
              d.metering().samplingIntervalMs()),
          d.limits(),
          d.quotas(),
          d.secrets(),
          DaemonConfig.Compile.defaults(maxConcurrentUnits),
          DaemonConfig.Modules.defaults(),
          d.pools(),
          d.io(),
          d.environments(),
          d.policy(),
          d.metrics(),
          d.durable(),
          d.fleet(),
          d.standing(),
          d.signing());
    }
  }

  public static Daemon start(DaemonPaths paths, Settings settings) throws IOException {
    return start(paths, settings.toConfig());
  }

  /** What the configuration says about metering, as the metering module takes it. */
  static MeteringConfig meteringConfig(DaemonConfig config) {
    DaemonConfig.Metering m = config.metering();
    MeteringConfig mc =
        MeteringConfig.defaults()
            .withSamplingIntervalNs(m.samplingIntervalMs() * 1_000_000L)
            .withEstimator(new EstimatorModel(Map.of(DeviceClass.Cpu, m.estimatorCpuMilliwatts())));
    if (m.powercapRoot().isPresent()) {
      mc = mc.withPowercapRoot(m.powercapRoot().get());
    }
    if (m.nvmlLibrary().isPresent()) {
      mc = mc.withNvmlLibrary(m.nvmlLibrary().get());
    }
    return mc;
  }

  /**
   * The disk reserve {@code quotas.reserve_bytes} asks for, never less than the run store's log
   * takes ({@link RunStore#LOG_ROOM_BYTES}); a configured reserve below that is raised, and said.
   */
  static DiskReserve diskReserve(long configured, HostFaults faults) {
    if (configured > 0 && configured < RunStore.LOG_ROOM_BYTES) {
      LOG.warning(
          "quotas.reserve_bytes "
              + configured
              + " is less than what the run store's write-ahead log may take; "
              + RunStore.LOG_ROOM_BYTES
              + " bytes are kept for the node's records instead");
    }
    return new DiskReserve(configured, RunStore.LOG_ROOM_BYTES, DiskReserve.STATVFS, faults);
  }

  /** The node-side services the configuration describes. */
  /** What one exec's process tree may hold on this node, as configured. */
  static io.sandboxd.executor.TreeBounds execTree(DaemonConfig.Exec exec) {
    return new io.sandboxd.executor.TreeBounds(exec.maxProcesses(), exec.maxMemoryBytes());
  }

  static HostServices hostServices(
      DaemonConfig config,
      KvStore kv,
      DiskReserve reserve,
      HostFaults faults,
      Path stateDir,
      Attribution attribution) {
    HostServices.Builder b =
        new HostServices.Builder()
            .kv(kv)
            .secrets(secretStore(config, stateDir))
            .execSearchPath(config.exec().searchPath())
            .execDenylist(config.exec().denylist())
            .execTimeout(java.time.Duration.ofMillis(config.exec().timeoutMs()))
            .execTree(execTree(config.exec()))
            .nodePrivate(nodePrivate(config, stateDir))
            .egressTimeout(java.time.Duration.ofMillis(config.egressTimeoutMs()))
            .maxUnitMemoryBytes(config.maxUnitMemoryBytes())
            .journalLimits(
                new io.sandboxd.executor.Journal.Limits(
                    config.limits().journal().maxEntries(), config.limits().journal().maxBytes()))
            .quotas(config.quotas().storageBytesPerModule(), config.quotas().kvBytesPerModule())
            .reserve(reserve)
            .faults(faults);
    config
        .inference()
        .ifPresent(
            inf -> {
              DeviceClass serving = inf.servingClass();
              b.inference(inf.endpoint(), inf.servingClass())
                  .inferenceMeter(() -> attribution.cumulativeUj(serving));
            });
    return b.build();
  }

  /**
   * What an exec'd program never reads: the state directory, every secret file, and the powercap
   * zones, whose energy counters the node makes readable to the daemon's group for metering (the
   * kernel keeps them root's since they leak other workloads' secrets through power, PLATYPUS).
   */
  static List<Path> nodePrivate(DaemonConfig config, Path stateDir) {
    List<Path> out = new java.util.ArrayList<>();
    out.add(stateDir);
    for (DaemonConfig.Secret s : config.secrets().values()) {
      if (s.source() instanceof DaemonConfig.SecretSource.File f) {
        out.add(HostServices.defaultSecretsDir(stateDir).resolve(f.path()));
      }
    }
    // Each zone as the directory it names: in sysfs the class directory holds links into
    // /sys/devices, and a file is reached through the link only where its own directory is. Named
    // by the class path too, the hidden set would carve around every entry of /sys/class, a
    // hundred more rules an exec; the class directory itself lists the zones' names, nothing more.
    try (var zones = Files.newDirectoryStream(meteringConfig(config).powercapRoot())) {
      for (Path zone : zones) {
        try {
          out.add(zone.toRealPath());
        } catch (IOException e) {
          out.add(zone); // a dangling link: hidden as named
        }
      }
    } catch (IOException e) {
      // no powercap tree here: nothing to hide
    }
    return out;
  }

  /**
   * The configured secrets, each read from its file or variable at use and bound where the
   * configuration says; a relative file is under the state directory's {@code secrets/}.
   */
  static SecretStore secretStore(DaemonConfig config, Path stateDir) {
    Map<String, java.util.function.Supplier<Optional<String>>> readers = new java.util.TreeMap<>();
    config
        .secrets()
        .forEach(
            (handle, s) -> {
              if (s.source() instanceof DaemonConfig.SecretSource.File f) {
                Path file = HostServices.defaultSecretsDir(stateDir).resolve(f.path());
                readers.put(handle, () -> SecretStore.readFile(file));
              } else if (s.source() instanceof DaemonConfig.SecretSource.Env e) {
                readers.put(handle, () -> SecretStore.readEnv(e.name()));
              }
            });
    return SecretStore.readers(config.secretBindings(), readers);
  }

  private final DaemonPaths paths;
  private final SocketLock lock;
  private final RunStore store;
  private final Executor executor;
  private final Server server;
  private final EventLoopGroup boss;
  private final EventLoopGroup workers;
  private final NodeIdentity node;
  private final DiscoveredMeters meters;
  private final Attribution attribution;
  private final KvStore kv;
  private final WarmPools pools;
  private final ServingState serving;
  private final StoreVerifier verifier;
  private final DaemonMetrics metrics;
  private final Optional<MetricsEndpoint> metricsEndpoint;

  private Daemon(
      DaemonPaths paths,
      SocketLock lock,
      RunStore store,
      Executor executor,
      Server server,
      EventLoopGroup boss,
      EventLoopGroup workers,
      NodeIdentity node,
      DiscoveredMeters meters,
      Attribution attribution,
      KvStore kv,
      WarmPools pools,
      ServingState serving,
      StoreVerifier verifier,
      DaemonMetrics metrics,
      Optional<MetricsEndpoint> metricsEndpoint) {
    this.serving = serving;
    this.verifier = verifier;
    this.metrics = metrics;
    this.metricsEndpoint = metricsEndpoint;
    this.pools = pools;
    this.meters = meters;
    this.attribution = attribution;
    this.kv = kv;
    this.paths = paths;
    this.lock = lock;
    this.store = store;
    this.executor = executor;
    this.server = server;
    this.boss = boss;
    this.workers = workers;
    this.node = node;
  }

  /**
   * Starts the daemon with {@code config}; returns once it serves on its socket. Refuses a run
   * store that does not match the node's signed records.
   */
  public static Daemon start(DaemonPaths paths, DaemonConfig config) throws IOException {
    return start(paths, config, false);
  }

  /**
   * As {@link #start(DaemonPaths, DaemonConfig)}; with {@code serveDamagedStore} a damaged store is
   * served, its damaged runs listed as tampered and never with their stored values.
   */
  public static Daemon start(DaemonPaths paths, DaemonConfig config, boolean serveDamagedStore)
      throws IOException {
    // What the configuration cannot check alone, checked before anything starts.
    FleetShipping.aggregatorKey(config.fleet());
    DaemonClient.quietNettyBootstrap();
    // The serving path's classes load on the second core while this thread checks the store.
    ServingPreload preload = ServingPreload.start();
    // So does the signing engine (JNA, libsodium, its known answers: about 40 ms here), while this
    // thread reads the node's key.
    FutureTask<Ed25519Engine> engine =
        new FutureTask<>(() -> signingEngine(config.signing().ed25519()));
    Thread engineLoad = new Thread(engine, "sandboxd-signing-load");
    engineLoad.setDaemon(true);
    engineLoad.start();
    createPrivateDir(paths.stateDir());
    PrivatePath.requireDirectory(paths.stateDir(), "state directory");
    Path socketDir = paths.socket().getParent();
    if (!Files.isDirectory(socketDir)) {
      createPrivateDir(socketDir);
    }
    PrivatePath.requireSocketDirectory(socketDir);
    SocketLock lock = SocketLock.acquire(paths.socket());
    RunStore store = null;
    Executor executor = null;
    DiscoveredMeters meters = null;
    Attribution attribution = null;
    KvStore kv = null;
    WarmPools pools = null;
    StoreVerifier verifier = null;
    MetricsEndpoint endpoint = null;
    LogCheckpointer checkpoints = null;
    UnitCompiler compiler = null;
    FairCalls calls = null;
    EventLoopGroup boss = null;
    EventLoopGroup workers = null;
    Server server = null;
    long startedNanos = System.nanoTime();
    try {
      NodeIdentity node = NodeIdentity.load(paths.stateDir(), paths.keyFile(), () -> ready(engine));
      // Read before SQLite's recovery replays or drops it: what an unclean stop left behind (a
      // torn tail SQLite rolls back as it opens was never committed, so never acknowledged).
      WalTail tail = WalTail.inspect(paths.storeFile());
      store = RunStore.open(paths.storeFile(), node.key());
      LOG.info("run store " + paths.storeFile() + ": " + tail.describe());
      verifyStore(store, paths.storeFile(), serveDamagedStore);
      checkpoints = LogCheckpointer.start(store, node, config.fleet());
      DaemonMetrics metrics = new DaemonMetrics();
      store.onAppend(metrics::storeAppend);
      DaemonConfig.Store retention = config.limits().store();
      MeteringConfig meteringConfig = meteringConfig(config);
      meters = MeterDiscovery.discover(meteringConfig);
      LOG.info("energy meters: " + meters.summaryLine());
      attribution = Attribution.start(meters, meteringConfig);
      Set<DeviceClass> meterable = EnumSet.noneOf(DeviceClass.class);
      meterable.addAll(meters.meterableClasses());
      HostFaultLog faults = new HostFaultLog();
      DiskReserve reserve = diskReserve(config.quotas().reserveBytes(), faults);
      kv = KvStore.open(paths.stateDir().resolve("kv.db"), reserve);
      HostServices services =
          hostServices(config, kv, reserve, faults, paths.stateDir(), attribution);
      executor =
          new Executor(
              config.maxConcurrentUnits(),
              EnergyModel.attributed(attribution),
              config.maxWallMs(),
              services);
      compiler =
          new UnitCompiler(
              new FactoryCache(config.modules().factoryCacheEntries()),
              io.sandboxd.executor.CompileLimits.defaults()
                  .withBudget(
                      config.compile().maxConcurrent(),
                      java.time.Duration.ofMillis(config.compile().timeoutMs()),
                      java.time.Duration.ofMillis(config.compile().timeoutMsPerMib())));
      ModuleStore modules =
          ModuleStore.open(
              paths.stateDir().resolve("modules"),
              compiler,
              config.modules().maxBytes(),
              config.modules().maxModules());
      OfferedEnvironments environments = environments(config, paths.stateDir(), node);
      store.appendToLog(
          RunStore.MANIFEST_LEAF,
          environments.list().stream().map(OfferedEnvironments.Offer::address).toList());
      // The one run pipeline (issue 22): submitted and durable runs share each of its parts.
      Admission admission =
          new Admission(compiler, meterable, config.secretBindings(), submitterPolicy(config))
              .offering(environments, config.io());
      Launch launch = new Launch(executor, paths.stateDir().resolve("storage"), environments);
      RecordSealer sealer = new RecordSealer(node);
      RunIds runIds = new RunIds();
      RunSupervisor supervisor = new RunSupervisor(admission, launch, sealer, runIds, store);
      supervisor.onPhases(metrics::runPhase);
      pools =
          PoolWiring.start(config, meters, attribution, store, modules, sealer, compiler, executor);
      supervisor.usePools(pools);
      StandingGrants standing =
          StandingGrants.open(
              paths.keyFile().getParent(),
              store,
              config.standing().maxPolicies(),
              config.standing().eventSources());
      DurableRuns durableRuns =
          new DurableRuns(
              admission,
              launch,
              sealer,
              runIds,
              node,
              store,
              io.sandboxd.executor.SnapshotStore.open(paths.stateDir().resolve("snapshots")),
              io.sandboxd.warmpool.MeteredIdlePower.of(
                  meters, attribution, config.pools().idleEstimateMw()),
              paths.stateDir().resolve("durable"));
      LiveAmendments live = new LiveAmendments(standing, durableRuns);
      durableRuns.acceptAmendments(live);
      durableRuns.trustBundles(
          new BundleTrust(node.key(), java.util.Set.copyOf(config.durable().trustedNodes())));
      durableRuns.limitStore(
          new StoreRoom(
              store, paths.stateDir().resolve("snapshots"), config.limits().store().maxBytes()));
      // From here on this thread builds the server: the preload must be done (see ServingPreload).
      preload.await();
      ServingState serving = new ServingState();
      // Under load the verifier is held to its share of a core; once no run has been in flight
      // for a while it may take the idle share, to seal what a busy spell left unsealed.
      verifier =
          new StoreVerifier(
              store,
              metrics::verification,
              new CpuShare(
                  retention.verifyCpuPercent(),
                  retention.verifyIdleCpuPercent(),
                  () -> serving.idleFor(DaemonConfig.Store.IDLE_AFTER_MS)));
      if (config.metrics().listen().isPresent()) {
        endpoint = MetricsEndpoint.start(config.metrics().listen().get(), metrics::scrape);
      }
      NodeStatus status =
          new NodeStatus(
              node,
              meters,
              store,
              verifier,
              serving,
              startedNanos,
              admission.policy(),
              Optional.ofNullable(endpoint)
                  .map(e -> e.address().getHostString() + ":" + e.address().getPort()),
              config.standing().eventSources());
      registerGauges(metrics, serving, store, verifier);
      boss = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
      workers = new MultiThreadIoEventLoopGroup(2, EpollIoHandler.newFactory());
      // Every call of both services is authorized against the node policy (issue 23).
      RpcAuthorization authz = new RpcAuthorization(admission.policy(), store.owners());
      calls = FairCalls.forNode(config.maxConcurrentUnits());
      server =
          serverBuilder(paths, config, boss, workers, calls)
              .maxInboundMessageSize(MAX_INBOUND_BYTES)
              .addService(
                  RequestDecoder.wrap(
                      io.grpc.ServerInterceptors.intercept(
                          new SandboxdService(
                                  supervisor,
                                  store,
                                  modules,
                                  pools,
                                  standing,
                                  durableRuns,
                                  new SandboxdService.Operations(serving, metrics, status))
                              .bindService(),
                          authz)))
              .addService(
                  RequestDecoder.wrap(
                      io.grpc.ServerInterceptors.intercept(
                          new JcpService(standing).useLive(live).bindService(), authz)))
              .intercept(CallerCredentials.interceptor())
              .addService(serving.health().getHealthService())
              .addService(io.grpc.protobuf.services.ProtoReflectionServiceV1.newInstance())
              .build()
              .start();
      // Bound under the process umask: set the mode explicitly (owner and group only), on the
      // socket we bound, never through a link planted in its place.
      PrivatePath.requireOwnFile(paths.socket(), "socket", true);
      Files.setPosixFilePermissions(paths.socket(), PosixFilePermissions.fromString("rw-rw----"));
      LOG.info(
          "sandboxd serving on "
              + paths.socket()
              + " as host "
              + node.host().id()
              + " key "
              + node.host().publicKey());
      serving.serving();
      verifier.start();
      // While the first client starts and connects, the run path loads and runs, and runs again
      // until a client's run is in flight (the JIT warms on its runs).
      Thread primer =
          RunPathPrimer.start(
              executor,
              node.key().engine(),
              meterable,
              paths.stateDir().resolve("prime"),
              () -> serving.inFlight() > 0 || serving.draining());
      retainInBackground(
          store,
          new RunStore.Retention(retention.maxBytes(), retention.maxRuns(), retention.maxAgeMs()));
      FleetShipping fleet = FleetShipping.startIfConfigured(config.fleet(), store, node.key());
      Daemon daemon =
          new Daemon(
              paths,
              lock,
              store,
              executor,
              server,
              boss,
              workers,
              node,
              meters,
              attribution,
              kv,
              pools,
              serving,
              verifier,
              metrics,
              Optional.ofNullable(endpoint));
      daemon.durable = durableRuns;
      daemon.primer = primer;
      daemon.fleet = fleet;
      daemon.checkpoints = checkpoints;
      daemon.compiler = compiler;
      daemon.calls = calls;
      daemon.parkOnStop = config.durable().parkOnStop();
      daemon.sealOnStop = config.limits().store().sealOnStop();
      return daemon;
    } catch (IOException | RuntimeException e) {
      if (server != null) {
        server.shutdownNow();
      }
      if (boss != null) {
        boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      }
      if (calls != null) {
        calls.close();
      }
      if (pools != null) {
        pools.close();
      }
      if (verifier != null) {
        verifier.close();
      }
      if (endpoint != null) {
        endpoint.close();
      }
      if (executor != null) {
        executor.close();
      }
      if (compiler != null) {
        compiler.close();
      }
      if (checkpoints != null) {
        checkpoints.close();
      }
      if (attribution != null) {
        attribution.close();
      }
      if (meters != null) {
        meters.close();
      }
      closeQuietly(kv);
      if (store != null) {
        store.close();
      }
      lock.close();
      throw e;
    }
  }

  /**
   * The environments the configuration offers, ingested, signed, checked and stored; a refused one
   * stops the start naming it and what was refused.
   */
  static OfferedEnvironments environments(DaemonConfig config, Path stateDir, NodeIdentity node)
      throws IOException {
    EnvironmentMounts mounts;
    try {
      mounts = new EnvironmentMounts(stateDir, config.environments().bindAllow());
    } catch (io.sandboxd.executor.MountException e) {
      throw new EnvironmentRefusedException("configuration: " + e.getMessage(), e);
    }
    OfferedEnvironments offered =
        OfferedEnvironments.load(
            config.environments(),
            node.key(),
            mounts,
            stateDir.resolve("environments"),
            Daemon::ingestDevcontainer);
    for (OfferedEnvironments.Offer o : offered.list()) {
      LOG.info(
          "environment "
              + o.name()
              + " b3:"
              + o.address()
              + (o.manifest().pinned() ? " pinned" : " unpinned"));
    }
    return offered;
  }

  /** A devcontainer.json ingested into its signed manifest (WIRE.md §2.7). */
  static OfferedEnvironments.SignedManifest ingestDevcontainer(
      byte[] devcontainer, io.sandboxd.attest.SigningKey key) {
    io.sandboxd.attest.ManifestEnvelope signed =
        io.sandboxd.attest.ManifestEnvelope.sign(
            io.sandboxd.attest.DevcontainerIngest.ingest(devcontainer), key);
    return new OfferedEnvironments.SignedManifest(signed.envelope(), signed.pinned());
  }

  /**
   * The node policy of {@code config}, its names resolved against the accounts files; without a
   * policy section (an embedded daemon: {@code sandboxd serve} picks its mode's default first) only
   * the daemon's own user is admitted.
   */
  static SubmitterPolicy submitterPolicy(DaemonConfig config) {
    io.sandboxd.config.NodePolicy policy =
        config.policy().orDefault(true, ownUid(), config.maxConcurrentUnits());
    SubmitterPolicy p = SubmitterPolicy.resolve(policy, Accounts.system());
    p.summary().forEach(line -> LOG.info("node policy rule " + line));
    return p;
  }

  /** This process's uid. */
  public static long ownUid() {
    return new com.sun.security.auth.module.UnixSystem().getUid();
  }

  /**
   * The server on the Unix socket with its connection bounds: a limiter on the listening channel
   * closes connections past the total or per-peer limit at once, and gRPC closes connections that
   * stay idle (no call in flight), never finish their handshake, or outlive their maximum age.
   */
  /** Calls one connection may have in flight at once. */
  static final int MAX_CALLS_PER_CONNECTION = 256;

  static NettyServerBuilder serverBuilder(
      DaemonPaths paths,
      DaemonConfig config,
      EventLoopGroup boss,
      EventLoopGroup workers,
      FairCalls calls) {
    DaemonConfig.Connections limits = config.limits().connections();
    long maxFds = ConnectionLimits.processMaxFds();
    int total = ConnectionLimits.effectiveTotal(limits.maxTotal(), maxFds);
    if (total < limits.maxTotal()) {
      LOG.warning(
          "connections.max_total "
              + limits.maxTotal()
              + " lowered to "
              + total
              + ": the process may open "
              + maxFds
              + " files and keeps "
              + ConnectionLimits.RESERVED_FDS
              + " for its own work");
    }
    ConnectionLimits limiter = new ConnectionLimits(total, limits.maxPerPeer());
    return NettyServerBuilder.forAddress(
            new DomainSocketAddress(paths.socket().toString()),
            // plaintext, with each connection's SO_PEERCRED in its calls' attributes
            io.grpc.netty.InternalNettyServerCredentials.create(new CallerCredentials()))
        .channelFactory(
            () -> {
              EpollServerDomainSocketChannel ch = new EpollServerDomainSocketChannel();
              // Ahead of the acceptor the server bootstrap adds: sees each child first.
              ch.pipeline().addLast("connection-limits", limiter);
              return ch;
            })
        // One connection cannot hold more calls than this at once (HTTP/2 MAX_CONCURRENT_STREAMS;
        // a client's further calls queue on its side), so with connections.max_per_peer no peer
        // holds an unbounded share of the daemon.
        .maxConcurrentCallsPerConnection(MAX_CALLS_PER_CONNECTION)
        // Handlers on a bounded pool shared fairly between connections and uids (FairCalls).
        // gRPC looks each call's method up on the event loop (a map lookup and FairCalls choosing
        // a lane, neither blocks): a pool of its own cost every call one more thread hand-off.
        .callExecutor(calls)
        .directExecutor()
        .bossEventLoopGroup(boss)
        .workerEventLoopGroup(workers)
        .maxConnectionIdle(limits.idleTimeoutMs(), TimeUnit.MILLISECONDS)
        .maxConnectionAge(limits.maxAgeMs(), TimeUnit.MILLISECONDS)
        // A call in flight at max age gets as long as a unit may run to finish.
        .maxConnectionAgeGrace(config.maxWallMs() + 60_000, TimeUnit.MILLISECONDS)
        .handshakeTimeout(limits.handshakeTimeoutMs(), TimeUnit.MILLISECONDS)
        .permitKeepAliveTime(30, TimeUnit.SECONDS)
        .permitKeepAliveWithoutCalls(false);
  }

  /**
   * Start-up verification from the sealed checkpoint: the signed head over the whole store, and
   * every record kind and shown column of the runs after the checkpoint (the runs before it are
   * checked again in the background). A damaged store is refused (naming each run and column)
   * unless the operator asked to serve it anyway.
   */
  private static void verifyStore(RunStore store, Path file, boolean serveDamaged) {
    long t0 = System.nanoTime();
    RunStore.StartupCheck check = store.verifyFromCheckpoint();
    long ms = (System.nanoTime() - t0) / 1_000_000;
    List<StoreDamage> damage = check.damage();
    if (damage.isEmpty()) {
      LOG.info(
          "run store "
              + file
              + ": "
              + check.headRuns()
              + " runs; the signed head and the "
              + check.verifiedRuns()
              + " run(s) after the sealed checkpoint at "
              + check.checkpointRuns()
              + " verify, every record and column checks against the signed ledger ("
              + ms
              + " ms); the runs before it are verified again in the background; "
              + store.headLine());
      return;
    }
    StringBuilder msg =
        new StringBuilder("run store " + file + " does not match the node's signed records:");
    for (StoreDamage d : damage) {
      msg.append("\n  ").append(d);
    }
    if (!serveDamaged) {
      throw new StoreException(
          msg.append(
                  "\nrefusing to serve it (start with --serve-damaged-store to serve it, its"
                      + " damaged runs marked tampered)")
              .toString());
    }
    LOG.severe(
        msg.append(
                "\nserving it anyway (--serve-damaged-store): damaged runs are listed"
                    + " as Tampered")
            .toString());
  }

  /**
   * Sets the store's retention and applies it once, on a thread of its own: its first check reads
   * the runs in age order and may prune many (a store over its bounds since the last start), so it
   * must not stand between the store check and SERVING. Appends apply it as well once it is set.
   */
  private static void retainInBackground(RunStore store, RunStore.Retention retention) {
    Thread t =
        new Thread(
            () -> {
              try {
                store.retain(retention);
              } catch (StoreException e) {
                LOG.warning("run store: retention at start not applied: " + e.getMessage());
              }
            },
            "sandboxd-retention-start");
    t.setDaemon(true);
    t.setPriority(Thread.MIN_PRIORITY);
    t.start();
  }

  /** Gauges read at each scrape: submissions in flight, store size, damage found. */
  private static void registerGauges(
      DaemonMetrics metrics, ServingState serving, RunStore store, StoreVerifier verifier) {
    metrics.gauge(
        "sandboxd.submissions.in.flight",
        "Submissions admitted and not yet answered (queued or running)",
        serving,
        ServingState::inFlight);
    metrics.gauge(
        "sandboxd.store.size.bytes", "Run store file and WAL", store, RunStore::sizeBytes);
    metrics.gauge(
        "sandboxd.store.damage",
        "Damage the last store verification found (0 when clean)",
        verifier,
        v -> v.state().damage().size());
    metrics.gauge(
        "sandboxd.draining",
        "1 while stopping (not admitting), else 0",
        serving,
        s -> s.draining() ? 1 : 0);
  }

  /** The daemon's meters, for other parts to register theirs (warm pools). */
  public DaemonMetrics metrics() {
    return metrics;
  }

  /** Admission and drain state. */
  public ServingState serving() {
    return serving;
  }

  // Durable runs and whether a stop parks them (durable.park_on_stop); set once at start.
  private DurableRuns durable;
  private Thread primer;
  // Started in start and stopped by close, before the store they use closes.
  private FleetShipping fleet = FleetShipping.NONE;
  private LogCheckpointer checkpoints;
  private UnitCompiler compiler;
  private FairCalls calls;
  private boolean parkOnStop;
  // Whether a drained stop seals the runs since the checkpoint (store.seal_on_stop); set once.
  private boolean sealOnStop;

  /** The background store verification. */
  public StoreVerifier verifier() {
    return verifier;
  }

  /**
   * Stops admitting (new submissions UNAVAILABLE, health NOT_SERVING), lets the submissions in
   * flight finish within {@code deadlineMs}, then closes; returns how many were still running.
   */
  public int drainAndClose(long deadlineMs) throws IOException, InterruptedException {
    if (parkOnStop && durable != null) {
      // Park what can be parked instead of killing it; a run that reaches no boundary in time is
      // stopped with the rest (and found failed at the next start).
      int parked = durable.parkAll(deadlineMs);
      if (parked > 0) {
        LOG.info("parked " + parked + " durable run(s) before stopping");
      }
    }
    long started = System.nanoTime();
    int left = serving.drain(deadlineMs);
    if (left > 0) {
      LOG.warning(left + " submission(s) still running after " + deadlineMs + " ms; stopping them");
    } else {
      LOG.info("drained: no submission in flight");
      if (sealOnStop) {
        sealBeforeStop(deadlineMs - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
      }
    }
    close();
    return left;
  }

  /**
   * Seals the runs since the checkpoint within what is left of the stop's deadline, so that the
   * next start serves without checking them (issue 22: start-up with 10^6 runs); what does not fit
   * is checked by that start-up, as after a crash. Only with {@code store.seal_on_stop}: a sealed
   * run changed while the daemon is stopped is no longer refused at start (issue 8).
   */
  private void sealBeforeStop(long budgetMs) {
    long t0 = System.nanoTime();
    long sealed;
    long unsealed;
    try {
      sealed = verifier.sealBeforeStop(budgetMs);
      unsealed = store.headRuns() - store.checkpoint().map(cp -> cp.runs()).orElse(0L);
    } catch (RuntimeException e) {
      // The stop goes on: the runs stay for the next start-up to check, as after a crash.
      LOG.warning("run store: cannot seal before stopping: " + e.getMessage());
      return;
    }
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    if (unsealed == 0) {
      LOG.info("run store: sealed " + sealed + " run(s) before stopping (" + ms + " ms)");
    } else {
      // Steps sealed before the time ran out (or damage was found) stay sealed.
      LOG.info(
          "run store: sealed "
              + sealed
              + " run(s) before stopping; "
              + unsealed
              + " left unsealed for the next start-up to check ("
              + ms
              + " ms of a "
              + Math.max(0, budgetMs)
              + " ms budget)");
    }
  }

  private static void closeQuietly(KvStore kv) {
    if (kv == null) {
      return;
    }
    try {
      kv.close();
    } catch (java.sql.SQLException e) {
      LOG.warning("kv store: close failed: " + e.getMessage());
    }
  }

  /**
   * The engine the node's key signs with (signing.ed25519): libsodium where it loads and signs the
   * known answers, else BouncyCastle; every engine gives the same bytes. A node configured for
   * libsodium that cannot use it does not start.
   */
  static Ed25519Engine signingEngine(Signing.Engine choice) {
    return signingEngine(choice, Ed25519Engine::libsodium);
  }

  /** As {@link #signingEngine(Signing.Engine)}, libsodium as {@code libsodium} loads it. */
  static Ed25519Engine signingEngine(Signing.Engine choice, Supplier<Ed25519Engine> libsodium) {
    if (choice == Signing.Engine.BOUNCYCASTLE) {
      LOG.info("signing: bouncycastle (signing.ed25519)");
      return Ed25519Engine.bouncyCastle();
    }
    try {
      Ed25519Engine engine = libsodium.get();
      LOG.info("signing: " + engine);
      return engine;
    } catch (AttestException e) {
      if (choice == Signing.Engine.LIBSODIUM) {
        throw new ConfigException("$.signing.ed25519: libsodium cannot be used: " + e.getMessage());
      }
      LOG.info("signing: bouncycastle (" + e.getMessage() + ")");
      return Ed25519Engine.bouncyCastle();
    }
  }

  /** The engine {@code load} chose; what it refused with, as it was thrown. */
  private static Ed25519Engine ready(FutureTask<Ed25519Engine> load) {
    try {
      return load.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while the signing engine loaded", e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException(e.getCause());
    }
  }

  private static void createPrivateDir(Path dir) throws IOException {
    if (!Files.isDirectory(dir)) {
      Files.createDirectories(
          dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    }
  }

  public DaemonPaths paths() {
    return paths;
  }

  public NodeIdentity node() {
    return node;
  }

  /**
   * Waits up to {@code max} for the start-up primer's runs to end (see {@link RunPathPrimer}): a
   * dry start that trains the class-data archive stops after them, so the archive holds the run
   * path's classes too.
   */
  public void awaitPrimed(java.time.Duration max) throws InterruptedException {
    primer.join(Math.max(1, max.toMillis()));
  }

  public void awaitTermination() throws InterruptedException {
    server.awaitTermination();
  }

  private final java.util.concurrent.atomic.AtomicBoolean closed =
      new java.util.concurrent.atomic.AtomicBoolean();
  private volatile DaemonClient self;

  /**
   * Whether the daemon serves: a health check through its own socket answers within {@code timeout}
   * (SERVING, or NOT_SERVING while it drains) and the store answers a read.
   */
  public boolean alive(java.time.Duration timeout) {
    try {
      DaemonClient c = self;
      if (c == null) {
        c = new DaemonClient(paths.socket());
        self = c;
      }
      io.grpc.health.v1.HealthCheckResponse r =
          io.grpc.health.v1.HealthGrpc.newBlockingStub(c.channel())
              .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
              .check(io.grpc.health.v1.HealthCheckRequest.getDefaultInstance());
      boolean answers =
          r.getStatus() == io.grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING
              || serving.draining();
      return answers && store.ping();
    } catch (RuntimeException e) {
      LOG.warning("liveness probe failed: " + e.getMessage());
      return false;
    }
  }

  @Override
  public void close() throws IOException {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    DaemonClient c = self;
    if (c != null) {
      c.close();
    }
    serving.health().enterTerminalState();
    verifier.close();
    metricsEndpoint.ifPresent(MetricsEndpoint::close);
    server.shutdown();
    try {
      if (!server.awaitTermination(10, TimeUnit.SECONDS)) {
        server.shutdownNow();
      }
    } catch (InterruptedException e) {
      server.shutdownNow();
      Thread.currentThread().interrupt();
    }
    boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    calls.close();
    // What is unshipped stays in the outbox for the next start.
    fleet.close();
    // Idle instances are evicted (reason Shutdown) and their records stored before the store
    // closes.
    pools.close();
    executor.close();
    compiler.close();
    checkpoints.close();
    attribution.close();
    meters.close();
    closeQuietly(kv);
    store.close();
    Files.deleteIfExists(paths.socket());
    lock.close();
  }
}
