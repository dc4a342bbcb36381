package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * What one execute segment consumed (WIRE.md §2.3): energy per dispatchable device class with its
 * provenance and meter, CPU and wall time, memory, I/O and network.
 */
public record Receipt(
    String runId,
    String unit,
    String grantsId,
    String tier,
    Map<DeviceClass, ClassEnergy> energy,
    long idleUj,
    List<InferenceUse> inference,
    long cpuTimeMs,
    long memoryPeakBytes,
    long wallMs,
    IoUse io,
    NetUse net,
    long startedMs,
    long endedMs) {

  public static final String SCHEMA = "sandbox.receipt/1";

  private static final Set<String> FIELDS =
      Set.of(
          "schema",
          "run_id",
          "unit",
          "grants_id",
          "tier",
          "energy_uj",
          "provenance",
          "energy_provenance",
          "total_uj",
          "idle_uj",
          "inference",
          "cpu_time_ms",
          "memory_peak_bytes",
          "wall_ms",
          "io",
          "net",
          "started_ms",
          "ended_ms",
          "meter");

  /** Inference energy attributed to the class that served the calls. */
  public record InferenceUse(DeviceClass deviceClass, long uj, long calls) {}

  /** Storage I/O performed through the broker. */
  public record IoUse(long readOps, long readBytes, long writeBytes) {
    public static final IoUse NONE = new IoUse(0, 0, 0);
  }

  /** Network bytes through the egress broker. */
  public record NetUse(long egressBytes, long ingressBytes) {
    public static final NetUse NONE = new NetUse(0, 0);
  }

  public Receipt {
    energy = Map.copyOf(new TreeMap<>(energy));
    inference = List.copyOf(inference);
    if (!energy.containsKey(DeviceClass.Cpu)) {
      throw new AttestException("receipt.energy_uj: Cpu is always dispatchable and must appear");
    }
  }

  public long totalUj() {
    long t = 0;
    for (ClassEnergy e : energy.values()) {
      t = Math.addExact(t, e.uj());
    }
    return t;
  }

  /** The worst provenance of any class (jouleclaw rule). */
  public Provenance energyProvenance() {
    Provenance worst = Provenance.HwShunt;
    for (ClassEnergy e : energy.values()) {
      worst = worst.worst(e.provenance());
    }
    return worst;
  }

  public ObjectNode toCore() {
    ObjectNode o = CanonicalJson.core(SCHEMA);
    o.put("run_id", runId);
    o.put("unit", unit);
    o.put("grants_id", grantsId);
    o.put("tier", tier);
    ObjectNode uj = o.putObject("energy_uj");
    ObjectNode prov = o.putObject("provenance");
    ObjectNode meter = o.putObject("meter");
    for (Map.Entry<DeviceClass, ClassEnergy> e : energy.entrySet()) {
      ClassEnergy c = e.getValue();
      String cls = e.getKey().jsonName();
      uj.put(cls, c.uj());
      prov.put(cls, c.provenance().name());
      ObjectNode m = meter.putObject(cls);
      m.put("source", c.source());
      m.put("resolution_uj", c.resolutionUj());
      m.put("min_window_ns", c.minWindowNs());
    }
    o.put("energy_provenance", energyProvenance().name());
    o.put("total_uj", totalUj());
    o.put("idle_uj", idleUj);
    ArrayNode inf = o.putArray("inference");
    for (InferenceUse i : inference) {
      inf.addObject()
          .put("class", i.deviceClass().jsonName())
          .put("uj", i.uj())
          .put("calls", i.calls());
    }
    o.put("cpu_time_ms", cpuTimeMs);
    o.put("memory_peak_bytes", memoryPeakBytes);
    o.put("wall_ms", wallMs);
    o.putObject("io")
        .put("read_ops", io.readOps())
        .put("read_bytes", io.readBytes())
        .put("write_bytes", io.writeBytes());
    o.putObject("net")
        .put("egress_bytes", net.egressBytes())
        .put("ingress_bytes", net.ingressBytes());
    o.put("started_ms", startedMs);
    o.put("ended_ms", endedMs);
    return o;
  }

  /** Reads a receipt core strictly; derived fields (totals, worst provenance) must agree. */
  public static Receipt fromCore(JsonNode core) {
    JsonReader r = JsonReader.of(core, "receipt", JsonReader.RECORD).only(FIELDS).schema(SCHEMA);
    Map<DeviceClass, ClassEnergy> energy = energy(r);
    List<InferenceUse> inference = new ArrayList<>();
    JsonNode inf = r.required("inference");
    if (!inf.isArray()) {
      throw new AttestException("receipt.inference: expected an array");
    }
    for (int i = 0; i < inf.size(); i++) {
      JsonReader e =
          JsonReader.of(inf.get(i), "receipt.inference[" + i + "]", JsonReader.RECORD)
              .only(Set.of("class", "uj", "calls"));
      inference.add(
          new InferenceUse(
              DeviceClass.parse(e.string("class"), e.path() + ".class"),
              e.u64("uj"),
              e.u64("calls")));
    }
    JsonReader io = r.object("io").only(Set.of("read_ops", "read_bytes", "write_bytes"));
    JsonReader net = r.object("net").only(Set.of("egress_bytes", "ingress_bytes"));
    Receipt receipt =
        new Receipt(
            r.string("run_id"),
            r.hex32("unit"),
            r.hex32("grants_id"),
            r.string("tier"),
            energy,
            r.u64("idle_uj"),
            inference,
            r.u64("cpu_time_ms"),
            r.u64("memory_peak_bytes"),
            r.u64("wall_ms"),
            new IoUse(io.u64("read_ops"), io.u64("read_bytes"), io.u64("write_bytes")),
            new NetUse(net.u64("egress_bytes"), net.u64("ingress_bytes")),
            r.u64("started_ms"),
            r.u64("ended_ms"));
    if (r.u64("total_uj") != receipt.totalUj()) {
      throw new AttestException("receipt.total_uj: does not equal the sum of energy_uj");
    }
    if (!r.string("energy_provenance").equals(receipt.energyProvenance().name())) {
      throw new AttestException("receipt.energy_provenance: is not the worst of provenance");
    }
    return receipt;
  }

  /**
   * The energy of a receipt core this node signed, by class, without reading its other members (a
   * metrics update per run; {@link #fromCore} reads and checks the whole core).
   */
  public static Map<DeviceClass, ClassEnergy> energyOf(JsonNode core) {
    return energy(JsonReader.of(core, "receipt", JsonReader.RECORD));
  }

  private static Map<DeviceClass, ClassEnergy> energy(JsonReader r) {
    JsonReader uj = r.object("energy_uj");
    JsonReader prov = r.object("provenance");
    JsonReader meter = r.object("meter");
    Map<DeviceClass, ClassEnergy> energy = new TreeMap<>();
    for (Iterator<String> it = uj.node().fieldNames(); it.hasNext(); ) {
      String cls = it.next();
      DeviceClass deviceClass = DeviceClass.parse(cls, "receipt.energy_uj");
      JsonReader m = meter.object(cls).only(Set.of("source", "resolution_uj", "min_window_ns"));
      energy.put(
          deviceClass,
          new ClassEnergy(
              uj.u64(cls),
              Provenance.parse(prov.string(cls), "receipt.provenance." + cls),
              m.string("source"),
              m.u64("resolution_uj"),
              m.u64("min_window_ns")));
    }
    if (prov.node().size() != energy.size() || meter.node().size() != energy.size()) {
      throw new AttestException("receipt: energy_uj, provenance and meter must have the same keys");
    }
    return energy;
  }

  /** Starts a Receipt built field by field; unset numbers are 0, unset references null. */
  public static Builder builder() {
    return new Builder();
  }

  /** Builds a {@link Receipt} by field name instead of position. */
  public static final class Builder {
    private String runId;
    private String unit;
    private String grantsId;
    private String tier;
    private Map<DeviceClass, ClassEnergy> energy = new TreeMap<>();
    private long idleUj;
    private List<InferenceUse> inference = List.of();
    private long cpuTimeMs;
    private long memoryPeakBytes;
    private long wallMs;
    private IoUse io = IoUse.NONE;
    private NetUse net = NetUse.NONE;
    private long startedMs;
    private long endedMs;

    private Builder() {}

    public Builder runId(String runId) {
      this.runId = runId;
      return this;
    }

    public Builder unit(String unit) {
      this.unit = unit;
      return this;
    }

    public Builder grantsId(String grantsId) {
      this.grantsId = grantsId;
      return this;
    }

    public Builder tier(String tier) {
      this.tier = tier;
      return this;
    }

    public Builder energy(Map<DeviceClass, ClassEnergy> energy) {
      this.energy = energy;
      return this;
    }

    public Builder idleUj(long idleUj) {
      this.idleUj = idleUj;
      return this;
    }

    public Builder inference(List<InferenceUse> inference) {
      this.inference = inference;
      return this;
    }

    public Builder cpuTimeMs(long cpuTimeMs) {
      this.cpuTimeMs = cpuTimeMs;
      return this;
    }

    public Builder memoryPeakBytes(long memoryPeakBytes) {
      this.memoryPeakBytes = memoryPeakBytes;
      return this;
    }

    public Builder wallMs(long wallMs) {
      this.wallMs = wallMs;
      return this;
    }

    public Builder io(IoUse io) {
      this.io = io;
      return this;
    }

    public Builder net(NetUse net) {
      this.net = net;
      return this;
    }

    public Builder startedMs(long startedMs) {
      this.startedMs = startedMs;
      return this;
    }

    public Builder endedMs(long endedMs) {
      this.endedMs = endedMs;
      return this;
    }

    public Receipt build() {
      return new Receipt(
          runId,
          unit,
          grantsId,
          tier,
          energy,
          idleUj,
          inference,
          cpuTimeMs,
          memoryPeakBytes,
          wallMs,
          io,
          net,
          startedMs,
          endedMs);
    }
  }
}
