package io.sandboxd.daemon.cli;

import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.GetRecordsRequest;
import io.sandboxd.daemon.rpc.GetRunRequest;
import io.sandboxd.daemon.rpc.ListRunsRequest;
import io.sandboxd.daemon.rpc.RecordsReply;
import io.sandboxd.daemon.rpc.RunInfo;
import java.time.Instant;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** `sandboxctl runs list|show`: what the daemon has recorded. */
@Command(
    name = "runs",
    description = "List runs, or show one run and its records.",
    subcommands = {
      RunsCommand.ListRuns.class,
      RunsCommand.ShowRun.class,
      OutputCommand.class,
      RunsExportCommand.class,
      RunsDurableCommands.Suspend.class,
      RunsDurableCommands.Resume.class,
      RunsDurableCommands.Wait.class,
      RunsDurableCommands.Log.class,
      RunsDurableCommands.Import.class,
      RunsDurableCommands.Reclaim.class
    })
final class RunsCommand extends CommandGroup {
  /** How the daemon lists a run whose stored values do not match its signed records. */
  static final String TAMPERED = "{\"Tampered\":";

  /** `runs list`. */
  @Command(name = "list", description = "List recorded runs, newest first.")
  static final class ListRuns extends DaemonCommand {
    @Option(names = "--limit", description = "At most this many runs (default 100).")
    int limit = 100;

    @Override
    int ask(DaemonClient c) {
      var reply = c.stub().listRuns(ListRunsRequest.newBuilder().setLimit(limit).build());
      System.out.printf(
          "%-20s  %-24s  %-8s  %-16s  %-10s  %s%n",
          "RUN", "STARTED", "SEGMENTS", "UNIT", "STATE", "OUTCOME");
      for (RunInfo r : reply.getRunsList()) {
        System.out.printf(
            "%-20s  %-24s  %-8d  %-16s  %-10s  %s%n",
            r.getRunId(),
            Instant.ofEpochMilli(r.getStartedMs()),
            r.getSegments(),
            r.getUnit().substring(0, Math.min(16, r.getUnit().length())),
            r.getState(),
            r.getOutcomeJson());
      }
      return 0;
    }
  }

  /** `runs show RUN [--export]`. */
  @Command(name = "show", description = "Show a run; --export prints its segments as JSON lines.")
  static final class ShowRun extends DaemonCommand {
    @Mixin RunArgument run;

    @Option(
        names = "--export",
        description = "Print the segment envelopes as JSON lines (pipe to `sandboxctl verify -`).")
    boolean export;

    @Option(
        names = "--json",
        description = "Print the run and its signed records (warm-pool claim included) as JSON.")
    boolean json;

    @Override
    int ask(DaemonClient c) {
      RunInfo r = c.stub().getRun(GetRunRequest.newBuilder().setRunId(run.id).build());
      if (json) {
        RecordsReply records =
            r.getOutcomeJson().startsWith(TAMPERED)
                ? RecordsReply.getDefaultInstance()
                : c.stub().getRecords(GetRecordsRequest.newBuilder().setRunId(run.id).build());
        System.out.println(RunJson.of(r, records));
        return r.getOutcomeJson().startsWith(TAMPERED) ? 1 : 0;
      }
      if (r.getOutcomeJson().startsWith(TAMPERED)) {
        System.out.println("run        " + r.getRunId());
        System.out.println("outcome    " + r.getOutcomeJson());
        System.err.println(
            "sandboxctl runs show: run "
                + run.id
                + " is TAMPERED: the node's store does not match its signed records");
        return 1;
      }
      RecordsReply rec =
          c.stub().getRecords(GetRecordsRequest.newBuilder().setRunId(run.id).build());
      if (export) {
        rec.getSegmentsList().forEach(System.out::println);
        // The JCP records travel with the chain, so verify can check its amendments offline.
        rec.getJcpList().forEach(System.out::println);
        return 0;
      }
      System.out.println("run        " + r.getRunId());
      System.out.println("started    " + Instant.ofEpochMilli(r.getStartedMs()));
      System.out.println("unit       " + r.getUnit());
      System.out.println("grants_id  " + r.getGrantsId());
      if (r.hasSubmitterUid()) {
        System.out.println("submitter  uid " + Integer.toUnsignedLong(r.getSubmitterUid()));
      }
      System.out.println("outcome    " + r.getOutcomeJson());
      System.out.println("segments   " + r.getSegments() + " (head " + r.getHead() + ")");
      if (!r.getPruned().isEmpty()) {
        System.out.println("pruned     " + r.getPruned());
      }
      if (!r.getLog().isEmpty()) {
        System.out.print("log:\n" + r.getLog().indent(2));
      }
      if (!r.getIoJson().isEmpty()) {
        System.out.println("io         " + r.getIoJson());
        System.out.println(
            "exit       "
                + Integer.toUnsignedString(r.getExitStatus())
                + (r.getExited() ? " (proc_exit)" : ""));
      }
      rec.getReceiptsList().forEach(x -> System.out.println("receipt     " + x));
      rec.getAttestationsList().forEach(x -> System.out.println("attestation " + x));
      rec.getSegmentsList().forEach(x -> System.out.println("segment     " + x));
      rec.getClaimsList().forEach(x -> System.out.println("claim       " + x));
      rec.getJcpList().forEach(x -> System.out.println("jcp         " + x));
      return 0;
    }
  }
}
