package io.sandboxd.daemon;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.Outcome;
import io.sandboxd.attest.Provenance;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunSegment;
import io.sandboxd.daemon.store.RunRecord;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.executor.ClassEnergyReading;
import io.sandboxd.executor.ExecutionResult;
import io.sandboxd.executor.Executor;
import io.sandboxd.executor.Journal;
import io.sandboxd.executor.UnitRequest;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * Supervises one submission end to end: execute (or decline), build the receipt, attestation and
 * execute segment, sign them, and append them to the store before anyone is answered.
 */
public final class RunSupervisor {
  static final String TIER = "S2";

  private final Admission admission;
  private final Executor executor;
  private final RunStore store;
  private final NodeIdentity node;
  private final SecureRandom random = new SecureRandom();

  public RunSupervisor(Admission admission, Executor executor, RunStore store, NodeIdentity node) {
    this.admission = admission;
    this.executor = executor;
    this.store = store;
    this.node = node;
  }

  /** Admits, runs and records a unit; the returned record is on disk. */
  public RunRecord submit(byte[] module, String grantsJson, String entry) {
    Admission.Admitted a = admission.admit(module, grantsJson, entry);
    String runId = newRunId();
    Optional<String> decline = admission.declineReason(a.grants());
    ExecutionResult result;
    if (decline.isPresent()) {
      result = declined(a, decline.get());
    } else {
      try {
        result = executor.execute(new UnitRequest(runId, a.unit(), a.entry(), a.grants()));
      } catch (io.sandboxd.executor.UnitException e) {
        throw new AdmissionException(e.getMessage(), e);
      }
    }
    RunRecord record = seal(runId, a, result);
    store.append(record);
    return record;
  }

  private ExecutionResult declined(Admission.Admitted a, String reason) {
    long now = System.currentTimeMillis();
    Map<String, ClassEnergyReading> zero = new TreeMap<>();
    for (String c : Executor.dispatchableClasses(a.grants().compute())) {
      zero.put(c, new ClassEnergyReading(0, Provenance.Estimator, "none", 1, 0));
    }
    return new ExecutionResult(
        new Outcome.Declined(reason),
        0,
        0,
        now,
        now,
        0,
        zero,
        "",
        List.of(),
        Map.of(),
        Journal.rootOf(List.of()),
        a.grants().host().clock(),
        Executor.CLOCK_CONSTANT_MS,
        0);
  }

  private RunRecord seal(String runId, Admission.Admitted a, ExecutionResult r) {
    String grantsId = a.grants().grantsId();
    String unit = a.unit().address();
    Map<String, Receipt.ClassEnergy> energy = new TreeMap<>();
    for (Map.Entry<String, ClassEnergyReading> e : r.energy().entrySet()) {
      ClassEnergyReading c = e.getValue();
      energy.put(
          e.getKey(),
          new Receipt.ClassEnergy(
              c.uj(), c.provenance(), c.source(), c.resolutionUj(), c.minWindowNs()));
    }
    Receipt receipt =
        new Receipt(
            runId,
            unit,
            grantsId,
            TIER,
            energy,
            0,
            List.of(),
            TimeUnit.NANOSECONDS.toMillis(r.cpuTimeNanos()),
            r.memoryPeakBytes(),
            TimeUnit.NANOSECONDS.toMillis(r.wallNanos()),
            Receipt.IoUse.NONE,
            Receipt.NetUse.NONE,
            r.startedMs(),
            r.endedMs());
    Envelope receiptEnv = Envelope.sign(receipt.toCore(), node.key());
    long now = System.currentTimeMillis();
    Attestation attestation =
        new Attestation(
            node.host(),
            TIER,
            grantsId,
            receiptEnv.address(),
            unit,
            null,
            r.journalRoot(),
            r.outcome(),
            r.clockGranted(),
            r.clockGranted() ? null : r.clockConstantMs(),
            false,
            false,
            null,
            now);
    Envelope attestationEnv = Envelope.sign(attestation.toCore(), node.key());
    RunSegment segment =
        new RunSegment(
            runId,
            0,
            RunSegment.Kind.execute,
            null,
            node.host().id(),
            node.host().publicKey(),
            TIER,
            grantsId,
            receiptEnv.address(),
            null,
            0,
            Provenance.Estimator,
            now);
    Envelope segmentEnv = Envelope.sign(segment.toCore(), node.key());
    List<String> journal = r.journal().stream().map(CanonicalJson::canonicalString).toList();
    return new RunRecord(
        runId,
        r.startedMs(),
        unit,
        grantsId,
        CanonicalJson.canonicalString(r.outcome().toJson()),
        receiptEnv,
        attestationEnv,
        segmentEnv,
        journal,
        r.journalBlobs(),
        a.module(),
        r.log());
  }

  /** Time-ordered, unguessable run ids: 12 hex digits of ms then 8 random hex digits. */
  private String newRunId() {
    byte[] b = new byte[4];
    random.nextBytes(b);
    return String.format("%012x", System.currentTimeMillis()) + HexFormat.of().formatHex(b);
  }
}
