package io.sandboxd.enforcer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.CanonicalJsonException;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.JsonReader;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * One run driven by JSON query lines ({@code sandboxctl enforce}): each line is one query, answered
 * with one JSON line {@code {"decision":..,"reason"?:..,"taint":[..]}} or {@code {"error":..}}.
 * Taint carries from line to line: an allowed read (storage, kv, exec output, egress response) adds
 * the labels the flow grant gives it, and egress and exec are checked against it.
 */
public final class QueryRunner {
  /** One query kind: the fields a query of it may carry, and how this runner answers it. */
  private record Query(Set<String> fields, BiFunction<QueryRunner, JsonReader, Decision> answer) {
    static Query of(BiFunction<QueryRunner, JsonReader, Decision> answer, String... fields) {
      Set<String> all = new java.util.HashSet<>(Set.of(fields));
      all.add("query");
      return new Query(Set.copyOf(all), answer);
    }
  }

  // Every query kind, each in one place: a new one is one entry here.
  private static final Map<String, Query> QUERIES =
      Map.ofEntries(
          Map.entry(
              "may_dispatch",
              Query.of(
                  (r, f) -> r.enforcer.mayDispatch(parse(f, "class", DeviceClass::fromJson)),
                  "class")),
          Map.entry("may_path", Query.of(QueryRunner::path, "mode", "path")),
          Map.entry("may_egress", Query.of(QueryRunner::egress, "endpoint")),
          Map.entry("may_kv", Query.of(QueryRunner::kv, "dir", "key", "key_bytes")),
          Map.entry(
              "may_host",
              Query.of(
                  (r, f) -> r.enforcer.mayHost(parse(f, "service", HostService::fromJson)),
                  "service")),
          Map.entry("may_exec", Query.of(QueryRunner::exec, "program", "path", "argv", "running")),
          Map.entry(
              "may_navigate",
              Query.of((r, f) -> r.enforcer.mayNavigate(f.string("origin")), "origin")),
          Map.entry("may_display", Query.of(QueryRunner::display, "width", "height")),
          Map.entry("may_vnc", Query.of((r, f) -> r.enforcer.mayVnc())),
          Map.entry(
              "may_sustain_io",
              Query.of(
                  (r, f) -> r.enforcer.maySustainIo(required(f, "iops"), required(f, "read_bps")),
                  "iops",
                  "read_bps")),
          Map.entry("may_inbound", Query.of((r, f) -> r.enforcer.mayInbound())));

  private final Enforcer enforcer;
  private final Optional<ProgramResolver> resolver;
  private final RunTaint taint = new RunTaint();

  /**
   * A run under {@code enforcer}; exec queries naming a binary are resolved by {@code resolver}.
   */
  public QueryRunner(Enforcer enforcer, Optional<ProgramResolver> resolver) {
    this.enforcer = enforcer;
    this.resolver = resolver;
  }

  /** A run under {@code enforcer} whose exec queries carry program names only. */
  public QueryRunner(Enforcer enforcer) {
    this(enforcer, Optional.empty());
  }

  /** The run's taint so far. */
  public RunTaint taint() {
    return taint;
  }

  /** Answers each non-blank line of {@code in} with one line on {@code out}, in order. */
  public void run(BufferedReader in, PrintWriter out) throws IOException {
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      if (!line.isBlank()) {
        out.println(answer(line));
        out.flush();
      }
    }
  }

  /** The output line for one query line; never throws for bad input. */
  public String answer(String line) {
    JsonNode node;
    try {
      node = CanonicalJson.parse(line.getBytes(StandardCharsets.UTF_8));
    } catch (CanonicalJsonException e) {
      return error(e.getMessage());
    }
    return answer(node);
  }

  /** The output line for one parsed query. */
  public String answer(JsonNode query) {
    Decision d;
    try {
      d = decide(query);
    } catch (GrantsException | IllegalArgumentException e) {
      return error(e.getMessage());
    }
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("decision", d.name());
    if (!d.allowed()) {
      o.put("reason", d.reason());
    }
    ArrayNode t = o.putArray("taint");
    taint.labels().forEach(t::add);
    return CanonicalJson.canonicalString(o);
  }

  private static String error(String message) {
    ObjectNode o = CanonicalJson.mapper().createObjectNode();
    o.put("error", message);
    return CanonicalJson.canonicalString(o);
  }

  /** Decides one query and applies its taint; throws on a malformed query. */
  Decision decide(JsonNode query) {
    if (query == null || !query.isObject()) {
      throw new GrantsException("$", "a query is a JSON object");
    }
    JsonNode kind = query.get("query");
    String name = JsonReader.text(kind, "$.query", GrantsException.FAULT);
    Query q = QUERIES.get(name);
    if (q == null) {
      throw new GrantsException("$.query", "unknown query \"" + name + "\"");
    }
    return q.answer().apply(this, JsonReader.of(query, "$", q.fields(), GrantsException.FAULT));
  }

  private Decision display(JsonReader f) {
    if (f.optional("width").isEmpty() && f.optional("height").isEmpty()) {
      return enforcer.mayDisplay();
    }
    return enforcer.mayDisplay(required(f, "width"), required(f, "height"));
  }

  private static <T> T parse(JsonReader f, String key, Function<String, T> p) {
    return GrantsException.parsed(f.pathOf(key), f.string(key), p);
  }

  private static long required(JsonReader f, String key) {
    return f.optionalInteger(key, 0, JsonReader.MAX_U64)
        .orElseThrow(() -> new GrantsException(f.pathOf(key), "missing integer"));
  }

  /**
   * {@code decide} of the parsed {@code text}; a text that does not parse is DENIED with {@code
   * refusal} and the parser's reason, not an error: the query was well formed, its value is not.
   */
  private static <T> Decision parsedOrDenied(
      String text, Function<String, T> parse, String refusal, Function<T, Decision> decide) {
    T value;
    try {
      value = parse.apply(text);
    } catch (IllegalArgumentException e) {
      return Decision.denied(refusal + e.getMessage());
    }
    return decide.apply(value);
  }

  /** {@code d}; when allowed, the read from {@code source} adds its flow labels to the run. */
  private Decision read(Decision d, FlowSource source) {
    if (d.allowed()) {
      taint.add(enforcer.taints(source));
    }
    return d;
  }

  private Decision path(JsonReader f) {
    PathMode mode = parse(f, "mode", PathMode::fromJson);
    return parsedOrDenied(
        f.string("path"),
        StoragePath::parse,
        "path refused: ",
        p -> {
          Decision d = enforcer.mayPath(mode, p);
          return mode == PathMode.READ ? read(d, new FlowSource.StorageRead(p)) : d;
        });
  }

  private Decision egress(JsonReader f) {
    return parsedOrDenied(
        f.string("endpoint"),
        Endpoint::parse,
        "malformed endpoint: ",
        e -> read(enforcer.mayEgress(e, taint), new FlowSource.NetResponse(e)));
  }

  private Decision kv(JsonReader f) {
    KvDirection dir = parse(f, "dir", KvDirection::fromJson);
    byte[] key;
    if (f.optional("key").isPresent() == f.optional("key_bytes").isPresent()) {
      throw new GrantsException("$", "give exactly one of key (text) and key_bytes (integers)");
    }
    if (f.optional("key").isPresent()) {
      key = f.string("key").getBytes(StandardCharsets.UTF_8);
    } else {
      key = KvGrant.bytes(f.optional("key_bytes").get(), f.pathOf("key_bytes")).toArray();
    }
    Decision d = enforcer.mayKv(dir, key);
    return dir == KvDirection.READ ? read(d, new FlowSource.KvRead(Bytes.of(key))) : d;
  }

  private Decision exec(JsonReader f) {
    long running = f.u32("running", 0);
    Optional<JsonNode> argvNode = f.optional("argv");
    Optional<JsonNode> pathNode = f.optional("path");
    ExecRequest request;
    if (argvNode.isPresent()) {
      List<String> argv = f.strings("argv", List.of());
      if (argv.isEmpty()) {
        throw new GrantsException(f.pathOf("argv"), "empty argument vector");
      }
      request = requireResolver(f.pathOf("argv")).resolve(argv);
    } else if (pathNode.isPresent()) {
      String program =
          f.optional("program").isPresent() ? f.string("program") : baseName(f.string("path"));
      request = requireResolver(f.pathOf("path")).resolveFile(program, f.string("path"));
    } else {
      request = ExecRequest.named(f.string("program"));
    }
    return read(enforcer.mayExec(request, running, taint), new FlowSource.ExecOutput(request));
  }

  private ProgramResolver requireResolver(String path) {
    return resolver.orElseThrow(
        () -> new GrantsException(path, "this runner has no program resolver to hash binaries"));
  }

  private static String baseName(String path) {
    int slash = path.lastIndexOf('/');
    return slash >= 0 ? path.substring(slash + 1) : path;
  }
}
