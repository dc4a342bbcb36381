package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Set;

/**
 * The host's signed statement about one execution (WIRE.md §2.4): who ran which unit under which
 * grants, how it ended, the roots of its receipt and replay journal, and for a WASI command the
 * inputs it was given and the outputs it produced ({@code inputs}/{@code outputs}, null otherwise).
 */
public record Attestation(
    HostIdentity host,
    String tier,
    String grantsId,
    String receipt,
    String unit,
    String manifest,
    String journalRoot,
    Outcome outcome,
    boolean clockGranted,
    Long clockConstantMs,
    boolean probingDetected,
    boolean tamperingDetected,
    String teeReport,
    long issuedMs,
    Inputs inputs,
    Outputs outputs,
    Jcp jcp) {

  public static final String SCHEMA = "sandbox.attestation/1";

  private static final Set<String> FIELDS =
      Set.of(
          "schema",
          "host",
          "tier",
          "grants_id",
          "receipt",
          "unit",
          "manifest",
          "journal_root",
          "outcome",
          "clock",
          "probing_detected",
          "tampering_detected",
          "tee_report",
          "issued_ms",
          "inputs",
          "outputs",
          "jcp");

  /** Bytes named by address: BLAKE3-256 of the raw bytes (not JCS) and their count. */
  public record Blob(String address, long bytes) {
    private static final Set<String> FIELDS = Set.of("address", "bytes");

    /** The blob of {@code raw}. */
    public static Blob of(byte[] raw) {
      return new Blob(Blake3.hex(raw), raw.length);
    }

    ObjectNode toJson() {
      return CanonicalJson.mapper().createObjectNode().put("address", address).put("bytes", bytes);
    }

    static Blob read(JsonReader r) {
      r.only(FIELDS);
      return new Blob(r.hex32("address"), r.u64("bytes"));
    }
  }

  /** What a WASI command was given: its full argv and its stdin (null when none was attached). */
  public record Inputs(List<String> args, Blob stdin) {
    public Inputs {
      args = List.copyOf(args);
    }
  }

  /** What a WASI command wrote to stdout and stderr, as kept (at most the node's caps). */
  public record Outputs(Blob stdout, Blob stderr) {}

  /**
   * Where the run's grant came from under JCP (WIRE.md §2.11): the mint policy and minted child
   * (both null for a grant given as a document) and the amendments applied while it ran, in order
   * (its {@code grants_id} is then the last one's {@code new_grants_id}).
   */
  public record Jcp(String policy, String child, List<String> amendments) {
    private static final Set<String> FIELDS = Set.of("policy", "child", "amendments");

    public Jcp {
      amendments = List.copyOf(amendments);
      if ((policy == null) != (child == null)) {
        throw new AttestException("attestation.jcp: policy and child come together");
      }
    }

    ObjectNode toJson() {
      ObjectNode o = CanonicalJson.mapper().createObjectNode();
      if (policy != null) {
        o.put("policy", policy);
        o.put("child", child);
      }
      if (!amendments.isEmpty()) {
        ArrayNode a = o.putArray("amendments");
        amendments.forEach(a::add);
      }
      return o;
    }

    static Jcp read(JsonReader r) {
      r.only(FIELDS);
      String policy = r.optional("policy").isPresent() ? r.hex32("policy") : null;
      String child = r.optional("child").isPresent() ? r.hex32("child") : null;
      List<String> amendments =
          r.list(
              "amendments",
              (n, p) -> {
                String a = JsonReader.text(n, p, JsonReader.RECORD);
                Hex.decode(a, 32, p);
                return a;
              });
      return new Jcp(policy, child, amendments);
    }
  }

  public ObjectNode toCore() {
    ObjectNode o = CanonicalJson.core(SCHEMA);
    o.putObject("host")
        .put("id", host.id())
        .put("public_key", host.publicKey())
        .put("platform", host.platform());
    o.put("tier", tier);
    o.put("grants_id", grantsId);
    o.put("receipt", receipt);
    o.put("unit", unit);
    o.put("manifest", manifest);
    o.put("journal_root", journalRoot);
    o.set("outcome", outcome.toJson());
    ObjectNode clock = o.putObject("clock").put("granted", clockGranted);
    if (clockConstantMs == null) {
      clock.putNull("constant_ms");
    } else {
      clock.put("constant_ms", clockConstantMs.longValue());
    }
    o.put("probing_detected", probingDetected);
    o.put("tampering_detected", tamperingDetected);
    o.put("tee_report", teeReport);
    o.put("issued_ms", issuedMs);
    // Omitted, not null, when absent: the first shape had no such keys, and a unit of the sandbox
    // ABI keeps the bytes it always had (a reader treats a missing key as null).
    if (inputs != null) {
      ObjectNode in = o.putObject("inputs");
      ArrayNode args = in.putArray("args");
      inputs.args().forEach(args::add);
      if (inputs.stdin() == null) {
        in.putNull("stdin");
      } else {
        in.set("stdin", inputs.stdin().toJson());
      }
    }
    if (outputs != null) {
      ObjectNode out = o.putObject("outputs");
      out.set("stdout", outputs.stdout().toJson());
      out.set("stderr", outputs.stderr().toJson());
    }
    // Omitted when the run had no JCP provenance, so every earlier attestation keeps its bytes.
    if (jcp != null && (jcp.policy() != null || !jcp.amendments().isEmpty())) {
      o.set("jcp", jcp.toJson());
    }
    return o;
  }

  public static Attestation fromCore(JsonNode core) {
    JsonReader r =
        JsonReader.of(core, "attestation", JsonReader.RECORD).only(FIELDS).schema(SCHEMA);
    JsonReader h = r.object("host").only(Set.of("id", "public_key", "platform"));
    JsonReader clock = r.object("clock").only(Set.of("granted", "constant_ms"));
    return new Attestation(
        new HostIdentity(h.string("id"), h.hex32("public_key"), h.string("platform")),
        r.string("tier"),
        r.hex32("grants_id"),
        r.hex32("receipt"),
        r.hex32("unit"),
        r.nullableHex32("manifest"),
        r.nullableHex32("journal_root"),
        Outcome.fromJson(r.required("outcome"), "attestation.outcome"),
        clock.bool("granted"),
        clock.nullableU64("constant_ms"),
        r.bool("probing_detected"),
        r.bool("tampering_detected"),
        r.nullableString("tee_report"),
        r.u64("issued_ms"),
        r.optionalObject("inputs", Set.of("args", "stdin"))
            .map(Attestation::readInputs)
            .orElse(null),
        r.optionalObject("outputs", Set.of("stdout", "stderr"))
            .map(
                out ->
                    new Outputs(Blob.read(out.object("stdout")), Blob.read(out.object("stderr"))))
            .orElse(null),
        r.optional("jcp").map(n -> Jcp.read(r.object("jcp"))).orElse(null));
  }

  private static Inputs readInputs(JsonReader in) {
    JsonNode args = in.required("args");
    if (!args.isArray()) {
      throw in.fault(in.pathOf("args"), "expected an array, got " + JsonReader.typeOf(args));
    }
    return new Inputs(
        in.list("args", (n, p) -> JsonReader.text(n, p, JsonReader.RECORD)),
        in.optionalObject("stdin", Blob.FIELDS).map(Blob::read).orElse(null));
  }

  /**
   * The outcome of an attestation core this node signed, without reading its other members (the
   * store and metrics per run; {@link #fromCore} reads and checks the whole core).
   */
  public static Outcome outcomeOf(JsonNode core) {
    return Outcome.fromJson(
        JsonReader.of(core, "attestation", JsonReader.RECORD).required("outcome"),
        "attestation.outcome");
  }

  /** Starts an Attestation built field by field; unset numbers are 0, unset references null. */
  public static Builder builder() {
    return new Builder();
  }

  /** Builds an {@link Attestation} by field name instead of position. */
  public static final class Builder {
    private HostIdentity host;
    private String tier;
    private String grantsId;
    private String receipt;
    private String unit;
    private String manifest;
    private String journalRoot;
    private Outcome outcome;
    private boolean clockGranted;
    private Long clockConstantMs;
    private boolean probingDetected;
    private boolean tamperingDetected;
    private String teeReport;
    private long issuedMs;
    private Inputs inputs;
    private Outputs outputs;
    private Jcp jcp;

    private Builder() {}

    public Builder host(HostIdentity host) {
      this.host = host;
      return this;
    }

    public Builder tier(String tier) {
      this.tier = tier;
      return this;
    }

    public Builder grantsId(String grantsId) {
      this.grantsId = grantsId;
      return this;
    }

    public Builder receipt(String receipt) {
      this.receipt = receipt;
      return this;
    }

    public Builder unit(String unit) {
      this.unit = unit;
      return this;
    }

    public Builder manifest(String manifest) {
      this.manifest = manifest;
      return this;
    }

    public Builder journalRoot(String journalRoot) {
      this.journalRoot = journalRoot;
      return this;
    }

    public Builder outcome(Outcome outcome) {
      this.outcome = outcome;
      return this;
    }

    public Builder clockGranted(boolean clockGranted) {
      this.clockGranted = clockGranted;
      return this;
    }

    public Builder clockConstantMs(Long clockConstantMs) {
      this.clockConstantMs = clockConstantMs;
      return this;
    }

    public Builder probingDetected(boolean probingDetected) {
      this.probingDetected = probingDetected;
      return this;
    }

    public Builder tamperingDetected(boolean tamperingDetected) {
      this.tamperingDetected = tamperingDetected;
      return this;
    }

    public Builder teeReport(String teeReport) {
      this.teeReport = teeReport;
      return this;
    }

    public Builder issuedMs(long issuedMs) {
      this.issuedMs = issuedMs;
      return this;
    }

    /** What a WASI command was given; null (the default) for a unit that takes no inputs. */
    public Builder inputs(Inputs inputs) {
      this.inputs = inputs;
      return this;
    }

    /** What a WASI command wrote; null (the default) for a unit that has no stdio. */
    public Builder outputs(Outputs outputs) {
      this.outputs = outputs;
      return this;
    }

    /** The run's JCP provenance; null (the default) for none. */
    public Builder jcp(Jcp jcp) {
      this.jcp = jcp;
      return this;
    }

    public Attestation build() {
      return new Attestation(
          host,
          tier,
          grantsId,
          receipt,
          unit,
          manifest,
          journalRoot,
          outcome,
          clockGranted,
          clockConstantMs,
          probingDetected,
          tamperingDetected,
          teeReport,
          issuedMs,
          inputs,
          outputs,
          jcp);
    }
  }
}
