package io.sandboxd.attest;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;

/**
 * Verifies any mix of signed envelopes as one body of evidence: every envelope's address and
 * signature, one trusted signer set, every run's segment chain (whatever else is in the input), and
 * the references between segments, receipts and attestations.
 */
public final class EvidenceBundle {
  private EvidenceBundle() {}

  /** The verdict on a bundle. */
  public sealed interface Verdict {
    /** The signer keys the bundle was checked against (pinned, or the one key found). */
    Set<String> signers();

    /** Everything verifies and every reference between the records matches. */
    record Valid(
        Set<String> signers,
        List<SegmentChain.Verdict.Valid> chains,
        int receipts,
        int attestations,
        int others,
        List<RunTotal> totals)
        implements Verdict {}

    /** {@code where} (an item, or a seq of a run) fails for {@code reason}. */
    record Invalid(Set<String> signers, String where, String reason) implements Verdict {}
  }

  private record Item<T>(int index, Envelope envelope, T record) {}

  /**
   * Signed records with no links to check here, by schema: each is still read strictly, so that a
   * signed but malformed one (an unknown field, a float) is invalid, not just counted.
   */
  private static final Map<String, Consumer<JsonNode>> READ_STRICTLY =
      Map.of(
          WarmpoolEvict.SCHEMA, WarmpoolEvict::fromCore,
          StoredRun.SCHEMA, StoredRun::fromCore,
          StoreHead.SCHEMA, StoreHead::fromCore,
          StoreCheckpoint.SCHEMA, StoreCheckpoint::fromCore,
          FleetAggregate.SCHEMA, FleetAggregate::fromCore);

  /**
   * A run's energy (WIRE.md §2.6): the sum of its execute segments' receipts ({@code total_uj})
   * plus the idle energy its resume segments carry; {@code receiptsGiven} says whether every
   * receipt its chain names was in the input (otherwise {@code receiptsUj} covers only those).
   */
  public record RunTotal(String runId, long receiptsUj, long idleUj, boolean receiptsGiven) {
    public long totalUj() {
      return receiptsUj + idleUj;
    }
  }

  /**
   * Verifies {@code envelopes}. With {@code trusted} empty, all envelopes must share one signer
   * (which the verdict names); otherwise every signer must be one of {@code trusted}.
   */
  public static Verdict verify(List<Envelope> envelopes, Set<PublicKey> trusted) {
    Set<String> pinned = new LinkedHashSet<>();
    trusted.forEach(k -> pinned.add(k.hex()));
    Set<String> found = new LinkedHashSet<>();
    envelopes.forEach(e -> found.add(e.publicKey()));
    Set<String> signers = pinned.isEmpty() ? found : pinned;
    if (envelopes.isEmpty()) {
      return new Verdict.Invalid(signers, "input", "no envelopes");
    }
    for (int i = 0; i < envelopes.size(); i++) {
      Envelope e = envelopes.get(i);
      if (e.verify(Optional.empty()) instanceof Verification.Invalid inv) {
        return new Verdict.Invalid(signers, itemName(i, e), inv.reason());
      }
      if (!pinned.isEmpty() && !pinned.contains(e.publicKey())) {
        return new Verdict.Invalid(
            signers,
            itemName(i, e),
            "signed by " + e.publicKey() + ", expected signer " + String.join(" or ", pinned));
      }
    }
    if (pinned.isEmpty() && found.size() > 1) {
      return new Verdict.Invalid(
          signers,
          "input",
          "signed by "
              + found.size()
              + " different keys ("
              + String.join(", ", found)
              + "); name each key you trust with --signer");
    }
    Map<String, List<Item<RunSegment>>> runs = new LinkedHashMap<>();
    Map<String, Item<Receipt>> receipts = new LinkedHashMap<>();
    List<Item<Attestation>> attestations = new ArrayList<>();
    int others = 0;
    List<Item<WarmpoolClaim>> claims = new ArrayList<>();
    for (int i = 0; i < envelopes.size(); i++) {
      Envelope e = envelopes.get(i);
      String schema = e.schema().orElse("");
      try {
        switch (schema) {
          case RunSegment.SCHEMA -> {
            RunSegment s = RunSegment.fromCore(e.core());
            runs.computeIfAbsent(s.runId(), k -> new ArrayList<>()).add(new Item<>(i, e, s));
          }
          case Receipt.SCHEMA -> {
            // The same receipt twice is the same evidence; only the first is kept.
            receipts.putIfAbsent(e.address(), new Item<>(i, e, Receipt.fromCore(e.core())));
          }
          case Attestation.SCHEMA ->
              attestations.add(new Item<>(i, e, Attestation.fromCore(e.core())));
          case WarmpoolClaim.SCHEMA -> {
            // Parsed strictly (a malformed claim is invalid), then counted with the others.
            claims.add(new Item<>(i, e, WarmpoolClaim.fromCore(e.core())));
            others++;
          }
          default -> {
            Consumer<JsonNode> strict = READ_STRICTLY.get(schema);
            if (strict != null) {
              strict.accept(e.core());
            }
            others++;
          }
        }
      } catch (AttestException ex) {
        return new Verdict.Invalid(signers, "item " + i, ex.getMessage());
      }
    }
    for (Item<WarmpoolClaim> c : claims) {
      for (Item<Receipt> r : receipts.values()) {
        if (r.record().runId().equals(c.record().runId())
            && r.record().idleUj() != c.record().accruedIdleUj()) {
          return new Verdict.Invalid(
              signers,
              "warmpool claim at item " + c.index(),
              "accrued_idle_uj "
                  + c.record().accruedIdleUj()
                  + " but the run's receipt at item "
                  + r.index()
                  + " says idle_uj "
                  + r.record().idleUj());
        }
      }
    }
    List<SegmentChain.Verdict.Valid> chains = new ArrayList<>();
    List<RunTotal> totals = new ArrayList<>();
    Map<String, Item<RunSegment>> segmentByReceipt = new HashMap<>();
    for (Map.Entry<String, List<Item<RunSegment>>> run : runs.entrySet()) {
      List<Item<RunSegment>> segs = new ArrayList<>(run.getValue());
      // Every item verified above: the chain checks only its order and links.
      Optional<SegmentChain.Fork> fork =
          SegmentChain.fork(segs.stream().map(Item::envelope).toList(), true);
      if (fork.isPresent()) {
        return new Verdict.Invalid(
            signers, "seq " + fork.get().seq() + " of run " + run.getKey(), fork.get().reason());
      }
      segs.sort(Comparator.comparingLong(s -> s.record().seq()));
      SegmentChain.Verdict v =
          SegmentChain.verifyVerified(segs.stream().map(Item::envelope).toList());
      if (v instanceof SegmentChain.Verdict.Invalid inv) {
        return new Verdict.Invalid(
            signers, "seq " + inv.seq() + " of run " + run.getKey(), inv.reason());
      }
      chains.add((SegmentChain.Verdict.Valid) v);
      for (Item<RunSegment> s : segs) {
        if (s.record().receipt() != null) {
          segmentByReceipt.put(s.record().receipt(), s);
        }
      }
      Optional<String> bad = segmentReceipts(run.getKey(), segs, receipts);
      if (bad.isPresent()) {
        return new Verdict.Invalid(signers, "run " + run.getKey(), bad.get());
      }
      totals.add(total(run.getKey(), segs, receipts));
    }
    boolean mixed =
        (runs.isEmpty() ? 0 : 1) + (receipts.isEmpty() ? 0 : 1) + (attestations.isEmpty() ? 0 : 1)
            > 1;
    Map<String, Item<Attestation>> attestationByReceipt = new HashMap<>();
    for (Item<Attestation> a : attestations) {
      Optional<String> bad = attestationLinks(a, receipts, segmentByReceipt, mixed);
      if (bad.isEmpty()) {
        Item<Attestation> twin = attestationByReceipt.putIfAbsent(a.record().receipt(), a);
        if (twin != null && !twin.envelope().address().equals(a.envelope().address())) {
          bad = Optional.of("item " + twin.index() + " attests the same receipt differently");
        }
      }
      if (bad.isPresent()) {
        return new Verdict.Invalid(signers, "attestation at item " + a.index(), bad.get());
      }
    }
    if (mixed) {
      for (Item<Receipt> r : receipts.values()) {
        String addr = r.envelope().address();
        if (!segmentByReceipt.containsKey(addr) && !attestationByReceipt.containsKey(addr)) {
          return new Verdict.Invalid(
              signers,
              "receipt at item " + r.index(),
              "no given segment or attestation references receipt " + addr);
        }
      }
    }
    return new Verdict.Valid(
        signers,
        List.copyOf(chains),
        receipts.size(),
        attestations.size(),
        others,
        List.copyOf(totals));
  }

  private static RunTotal total(
      String runId, List<Item<RunSegment>> segs, Map<String, Item<Receipt>> receipts) {
    long receiptsUj = 0;
    long idleUj = 0;
    boolean all = true;
    for (Item<RunSegment> s : segs) {
      idleUj = Math.addExact(idleUj, s.record().idleUj());
      if (s.record().receipt() != null) {
        Item<Receipt> r = receipts.get(s.record().receipt());
        if (r == null) {
          all = false;
        } else {
          receiptsUj = Math.addExact(receiptsUj, r.record().totalUj());
        }
      }
    }
    return new RunTotal(runId, receiptsUj, idleUj, all);
  }

  /** "item 3", or "item 3 (seq 1 of run r)" for what reads as a segment. */
  private static String itemName(int index, Envelope e) {
    if (e.schema().filter(RunSegment.SCHEMA::equals).isPresent()) {
      var seq = e.core().get("seq");
      var run = e.core().get("run_id");
      if (seq != null && seq.isIntegralNumber() && run != null && run.isTextual()) {
        return "item " + index + " (seq " + seq.asLong() + " of run " + run.textValue() + ")";
      }
    }
    return "item " + index;
  }

  /** Each execute segment's receipt, when receipts of its run are given, must be one of them. */
  private static Optional<String> segmentReceipts(
      String runId, List<Item<RunSegment>> segs, Map<String, Item<Receipt>> receipts) {
    Set<String> named = new LinkedHashSet<>();
    for (Item<RunSegment> s : segs) {
      if (s.record().receipt() != null) {
        named.add(s.record().receipt());
      }
    }
    boolean runReceiptsGiven =
        receipts.values().stream().anyMatch(r -> r.record().runId().equals(runId));
    for (Item<RunSegment> s : segs) {
      RunSegment seg = s.record();
      if (seg.receipt() == null) {
        continue;
      }
      Item<Receipt> r = receipts.get(seg.receipt());
      if (r == null) {
        if (runReceiptsGiven) {
          return Optional.of(
              "seq " + seg.seq() + " names receipt " + seg.receipt() + ", which is not given");
        }
        continue;
      }
      String at = "seq " + seg.seq() + " and its receipt (item " + r.index() + ")";
      Receipt rc = r.record();
      if (!rc.runId().equals(runId)) {
        return Optional.of(at + " differ in run_id: " + rc.runId());
      }
      if (!rc.grantsId().equals(seg.grantsId())) {
        return Optional.of(at + " differ in grants_id");
      }
      if (!rc.tier().equals(seg.tier())) {
        return Optional.of(at + " differ in tier");
      }
      if (!r.envelope().publicKey().equals(s.envelope().publicKey())) {
        return Optional.of(at + " are signed by different keys");
      }
      Optional<String> sum = addsUp(segs, s, rc);
      if (sum.isPresent()) {
        return Optional.of("seq " + seg.seq() + " " + sum.get());
      }
    }
    for (Item<Receipt> r : receipts.values()) {
      if (r.record().runId().equals(runId) && !named.contains(r.envelope().address())) {
        return Optional.of(
            "receipt at item "
                + r.index()
                + " is for this run but no segment of its chain names it");
      }
    }
    return Optional.empty();
  }

  /**
   * An execute segment's cumulative {@code budget.consumed} is the previous segment's (zero at seq
   * 0) plus its own receipt's {@code cpu_time_ms} and {@code total_uj}: the sum a verifier can
   * check from the receipts, so a node cannot reset a budget at a park.
   */
  private static Optional<String> addsUp(
      List<Item<RunSegment>> segs, Item<RunSegment> s, Receipt rc) {
    RunSegment.Budget b = s.record().budget();
    if (b == null) {
      return Optional.empty();
    }
    long cpu = 0;
    long uj = 0;
    int at = segs.indexOf(s);
    if (at > 0) {
      RunSegment.Budget p = segs.get(at - 1).record().budget();
      if (p == null) {
        return Optional.empty();
      }
      cpu = p.consumedCpuMs();
      uj = p.consumedUj();
    }
    long wantCpu;
    long wantUj;
    try {
      wantCpu = Math.addExact(cpu, rc.cpuTimeMs());
      wantUj = Math.addExact(uj, rc.totalUj());
    } catch (ArithmeticException e) {
      return Optional.of("budget.consumed overflows");
    }
    if (b.consumedCpuMs() != wantCpu || b.consumedUj() != wantUj) {
      return Optional.of(
          "budget.consumed does not add up: "
              + b.consumedCpuMs()
              + " ms, "
              + b.consumedUj()
              + " uJ, but the previous segment's "
              + cpu
              + " ms, "
              + uj
              + " uJ plus its receipt's "
              + rc.cpuTimeMs()
              + " ms, "
              + rc.totalUj()
              + " uJ make "
              + wantCpu
              + " ms, "
              + wantUj
              + " uJ");
    }
    return Optional.empty();
  }

  /** An attestation's host is its signer, and its receipt is given (or named) and agrees. */
  private static Optional<String> attestationLinks(
      Item<Attestation> item,
      Map<String, Item<Receipt>> receipts,
      Map<String, Item<RunSegment>> segmentByReceipt,
      boolean mixed) {
    Attestation a = item.record();
    String signer = item.envelope().publicKey();
    if (!a.host().publicKey().equals(signer)) {
      return Optional.of("host.public_key " + a.host().publicKey() + " is not its signer");
    }
    Item<Receipt> r = receipts.get(a.receipt());
    Item<RunSegment> s = segmentByReceipt.get(a.receipt());
    if (r == null && s == null) {
      return mixed
          ? Optional.of(
              "receipt "
                  + a.receipt()
                  + " is neither among the given receipts nor named by a given segment")
          : Optional.empty();
    }
    if (r != null) {
      Receipt rc = r.record();
      if (!rc.unit().equals(a.unit())) {
        return Optional.of("unit differs from its receipt's (item " + r.index() + ")");
      }
      if (!rc.grantsId().equals(a.grantsId())) {
        return Optional.of("grants_id differs from its receipt's (item " + r.index() + ")");
      }
      if (!rc.tier().equals(a.tier())) {
        return Optional.of("tier differs from its receipt's (item " + r.index() + ")");
      }
      if (!r.envelope().publicKey().equals(signer)) {
        return Optional.of("signed by a different key than its receipt (item " + r.index() + ")");
      }
    }
    if (s != null) {
      RunSegment seg = s.record();
      if (!seg.grantsId().equals(a.grantsId()) || !seg.tier().equals(a.tier())) {
        return Optional.of(
            "grants_id or tier differs from seq " + seg.seq() + " of run " + seg.runId());
      }
      if (!seg.hostPublicKey().equals(signer)) {
        return Optional.of("signed by a different key than seq " + seg.seq() + " of its run");
      }
    }
    return Optional.empty();
  }
}
