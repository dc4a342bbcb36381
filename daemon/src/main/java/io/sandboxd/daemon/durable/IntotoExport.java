package io.sandboxd.daemon.durable;

import io.sandboxd.attest.Attestation;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.Envelope;
import io.sandboxd.attest.IntotoStatement;
import io.sandboxd.attest.Receipt;
import io.sandboxd.attest.RunStatement;
import io.sandboxd.attest.SigningKey;
import io.sandboxd.attest.SigstoreBundle;
import io.sandboxd.daemon.rpc.ExportIntotoReply;
import io.sandboxd.daemon.run.AdmissionException;
import io.sandboxd.daemon.run.RunNotFoundException;
import io.sandboxd.daemon.store.RecordKind;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.daemon.store.RunSummary;
import io.sandboxd.daemon.store.TamperedRunException;
import io.sandboxd.executor.ModuleStore;
import java.util.List;
import java.util.Optional;

/**
 * Builds a run's in-toto export: the statement of {@link RunStatement} from the run's stored,
 * signed records, signed by the node key as a Sigstore bundle. SHA-256 digests come from the bytes
 * the node still holds (module store, kept outputs) or the module bytes the client sends. A durable
 * run that ended is exported with its segment chain and JCP records (issue 23 item 4).
 */
public final class IntotoExport {
  private final RunStore store;
  private final ModuleStore modules;
  private final SigningKey key;

  public IntotoExport(RunStore store, ModuleStore modules, SigningKey key) {
    this.store = store;
    this.modules = modules;
    this.key = key;
  }

  private DurableRuns durable;

  /** Exports durable runs too, from {@code d} (null: none). */
  public IntotoExport durable(DurableRuns d) {
    this.durable = d;
    return this;
  }

  public ExportIntotoReply export(String runId, byte[] clientModule) {
    if (durable != null && durable.table().run(runId).isPresent()) {
      return exportDurable(runId, clientModule);
    }
    RunSummary run = store.run(runId).orElseThrow(() -> new RunNotFoundException(runId));
    if (run.tampered().isPresent()) {
      throw new TamperedRunException(runId, run.tampered().get());
    }
    Envelope receipt = only(store.records(runId, RecordKind.RECEIPT), runId, "receipt");
    Envelope attestation = only(store.records(runId, RecordKind.ATTESTATION), runId, "attestation");
    Attestation a = Attestation.fromCore(attestation.core());
    RunStatement.Artifact module =
        new RunStatement.Artifact(
            RunStatement.MODULE, a.unit(), moduleBytes(a.unit(), clientModule));
    Optional<RunStatement.Artifact> stdout = Optional.empty();
    Optional<RunStatement.Artifact> stderr = Optional.empty();
    if (a.outputs() != null) {
      stdout = Optional.of(output(runId, RunStatement.STDOUT, a.outputs().stdout()));
      stderr = Optional.of(output(runId, RunStatement.STDERR, a.outputs().stderr()));
    }
    IntotoStatement statement =
        RunStatement.of(runId, receipt, attestation, module, stdout, stderr);
    return reply(statement);
  }

  /** A durable run that ended: its final receipt and attestation, chain and JCP records. */
  private ExportIntotoReply exportDurable(String runId, byte[] clientModule) {
    List<Envelope> records = durable.table().records(runId);
    Optional<Envelope> attestation =
        records.stream()
            .filter(e -> e.schema().orElse("").equals(Attestation.SCHEMA))
            .reduce((x, y) -> y);
    if (attestation.isEmpty()) {
      throw new DurableRunException.Refused(
          "run "
              + runId
              + " is "
              + durable.run(runId).state()
              + ": its attestation, and so its in-toto evidence, comes when it ends");
    }
    Attestation a = Attestation.fromCore(attestation.get().core());
    Envelope receipt =
        records.stream()
            .filter(e -> e.address().equals(a.receipt()))
            .findFirst()
            .orElseThrow(
                () -> new TamperedRunException(runId, "receipt " + a.receipt() + " is not stored"));
    byte[] held = durable.table().module(runId);
    RunStatement.Artifact module =
        new RunStatement.Artifact(
            RunStatement.MODULE,
            a.unit(),
            clientModule.length > 0 ? moduleBytes(a.unit(), clientModule) : Optional.of(held));
    return reply(
        RunStatement.of(
            runId,
            receipt,
            attestation.get(),
            module,
            Optional.empty(),
            Optional.empty(),
            durable.chain(runId),
            records.stream()
                .filter(e -> e.schema().orElse("").equals(Receipt.SCHEMA))
                .filter(e -> !e.address().equals(a.receipt()))
                .toList(),
            durable.jcpRecords(runId)));
  }

  private ExportIntotoReply reply(IntotoStatement statement) {
    SigstoreBundle bundle = SigstoreBundle.sign(statement, key);
    ExportIntotoReply.Builder b =
        ExportIntotoReply.newBuilder()
            .setBundleJson(CanonicalJson.canonicalString(bundle.toJson()))
            .setPublicKey(bundle.publicKeyHint());
    for (IntotoStatement.Subject s : statement.subjects()) {
      b.addSubjects(
          s.name() + " " + String.join(",", s.digest().keySet().stream().sorted().toList()));
    }
    return b.build();
  }

  private Optional<byte[]> moduleBytes(String unit, byte[] clientModule) {
    if (clientModule.length > 0) {
      modules.checkSize(clientModule.length);
      String got = Blake3.hex(clientModule);
      if (!got.equals(unit)) {
        throw new AdmissionException(
            "module: the bytes sent hash to b3:" + got + ", the run's unit is b3:" + unit);
      }
      return Optional.of(clientModule);
    }
    return modules.holds(unit) ? Optional.of(modules.get(unit)) : Optional.empty();
  }

  private RunStatement.Artifact output(String runId, String name, Attestation.Blob blob) {
    // Pruned by retention: the subject keeps the BLAKE3 address the attestation signs.
    return new RunStatement.Artifact(name, blob.address(), store.ioBlob(runId, blob.address()));
  }

  private static Envelope only(List<Envelope> records, String runId, String kind) {
    if (records.isEmpty()) {
      throw new TamperedRunException(runId, "no " + kind + " is stored");
    }
    // A run signs one receipt and one attestation; the first is the run's own.
    return records.get(0);
  }
}
