package io.sandboxd.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.daemon.DaemonClient;
import io.sandboxd.daemon.rpc.GetOutputRequest;
import io.sandboxd.daemon.rpc.GetRunRequest;
import io.sandboxd.daemon.rpc.ReplayReply;
import io.sandboxd.daemon.rpc.RunInfo;
import io.sandboxd.daemon.rpc.SubmitReply;
import io.sandboxd.daemon.rpc.SubmitRequest;
import io.sandboxd.executor.WasiToolchain;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * WASI programs as people ship them, through the running daemon and the packaged sandboxctl: argv,
 * stdin, stdout and stderr apart, the exit status, the caps, and replay of a run's inputs. The
 * guest is {@code executor-wasm/src/test/c/wasi_io.c}, built with clang-16 for wasm32-wasi.
 */
class WasiProgramTest {
  @TempDir static Path dir;
  static DaemonProcess daemon;
  static DaemonClient client;
  static Path wasm;
  static Path grants;
  static byte[] module;

  static final int STDOUT_CAP = 4096;
  static final int STDIN_CAP = 65536;

  static final String GRANTS =
      "{\"compute\":{\"devices\":[],\"energy_budget_uj\":1000000000000,\"cpu_time_ms\":20000,"
          + "\"memory_bytes\":67108864},\"storage\":{\"read\":[],\"write\":[],\"delete\":[]},"
          + "\"network\":{\"outbound\":[],\"inbound\":false},"
          + "\"kv\":{\"read\":false,\"write\":false,\"prefixes\":[]},"
          + "\"host\":{\"logging\":true,\"clock\":false,\"random\":false,\"inference\":false}}";

  @BeforeAll
  static void start() throws Exception {
    Path cfg =
        Files.writeString(
            dir.resolve("io.json"),
            "{\"io\":{\"stdin_max_bytes\":"
                + STDIN_CAP
                + ",\"stdout_max_bytes\":"
                + STDOUT_CAP
                + ",\"stderr_max_bytes\":4096,\"args_max_count\":16,\"args_max_bytes\":1024}}");
    daemon =
        DaemonProcess.start(
            dir.resolve("state"), dir.resolve("run/sandboxd.sock"), "--config", cfg.toString());
    client = new DaemonClient(daemon.socket);
    wasm = dir.resolve("wasi_io.wasm");
    // The same guest the executor tests build: one source, kept beside them.
    build(DaemonProcess.ROOT.resolve("executor-wasm/src/test/c/wasi_io.c"), wasm);
    module = Files.readAllBytes(wasm);
    grants = Files.writeString(dir.resolve("grants.json"), GRANTS);
  }

  @AfterAll
  static void stop() throws Exception {
    Submissions.closeAll(client, daemon);
  }

  static void build(Path source, Path out) {
    WasiToolchain.compile(out, source.toString());
  }

  static DaemonProcess.Result cli(byte[] stdin, String... args) throws Exception {
    List<String> all = new ArrayList<>(List.of(args));
    int at = all.indexOf("--");
    List<String> own =
        List.of(
            wasm.toString(), "--grants", grants.toString(), "--socket", daemon.socket.toString());
    all.addAll(at < 0 ? all.size() : at, own);
    all.add(0, "run");
    return DaemonProcess.sandboxctl(stdin, all.toArray(new String[0]));
  }

  static SubmitReply submit(List<String> args, byte[] stdin) {
    SubmitRequest.Builder b =
        SubmitRequest.newBuilder()
            .setModule(ByteString.copyFrom(module))
            .setGrantsJson(GRANTS)
            .addAllArgs(args);
    if (stdin != null) {
      b.setStdin(ByteString.copyFrom(stdin)).setStdinSet(true);
    }
    return client.stub().withDeadlineAfter(120, TimeUnit.SECONDS).submit(b.build());
  }

  static JsonNode attestationCore(SubmitReply r) {
    return CanonicalJson.parse(r.getAttestation()).get("core");
  }

  @Test
  void argumentsAfterDoubleDashAreArgvAndStdoutIsOursAlone() throws Exception {
    DaemonProcess.Result r = cli(null, "--argv0", "prog", "--", "echo", "two words", "-x", "");
    assertEquals(0, r.exit(), r.err());
    assertEquals("argc=5\n[prog]\n[echo]\n[two words]\n[-x]\n[]\n", r.out());
    assertTrue(r.err().contains("outcome \"Completed\""), r.err());
    assertTrue(r.err().matches("(?s).*run [0-9a-f]{20} .*"), r.err());

    DaemonProcess.Result named = cli(null, "--", "echo");
    assertEquals("argc=2\n[wasi_io.wasm]\n[echo]\n", named.out(), "argv[0] is the file name");
  }

  @Test
  void stdinIsReadToItsEndAndStderrStaysApart() throws Exception {
    byte[] in = "select 6*7;\nand a second line\n".getBytes(UTF_8);
    DaemonProcess.Result r = cli(in, "--stdin", "-", "--", "cat");
    assertEquals(0, r.exit(), r.err());
    assertEquals(new String(in, UTF_8), r.out());
    assertTrue(r.err().startsWith("read " + in.length + " bytes\n"), r.err());

    Path file = Files.write(dir.resolve("in.bin"), in);
    DaemonProcess.Result fromFile = cli(null, "--stdin", file.toString(), "--", "cat");
    assertEquals(new String(in, UTF_8), fromFile.out());

    DaemonProcess.Result none = cli("ignored".getBytes(UTF_8), "--", "cat");
    assertEquals("", none.out(), "without --stdin the unit gets none");
    assertTrue(none.err().startsWith("read 0 bytes\n"), none.err());
  }

  @Test
  void theAttestationNamesArgsStdinAndOutputsByAddress() {
    long seed = 1616;
    byte[] in = new byte[20_000];
    new Random(seed).nextBytes(in);
    SubmitReply r = submit(List.of("prog", "cat"), in);
    assertEquals("\"Completed\"", r.getOutcomeJson(), r.getLog());
    assertEquals(STDOUT_CAP, r.getStdout().size(), "stdout kept up to the cap");
    assertArrayEquals(
        java.util.Arrays.copyOf(in, STDOUT_CAP), r.getStdout().toByteArray(), "seed " + seed);
    assertEquals("read 20000 bytes\n", r.getStderr().toStringUtf8());
    assertTrue(r.getLog().contains("stdout truncated at the node's cap of 4096 bytes"), r.getLog());
    JsonNode core = attestationCore(r);
    assertEquals("[\"prog\",\"cat\"]", core.at("/inputs/args").toString());
    assertEquals(Blake3.hex(in), core.at("/inputs/stdin/address").textValue());
    assertEquals(in.length, core.at("/inputs/stdin/bytes").longValue());
    assertEquals(
        Blake3.hex(r.getStdout().toByteArray()), core.at("/outputs/stdout/address").textValue());
    assertEquals(STDOUT_CAP, core.at("/outputs/stdout/bytes").longValue());
    assertEquals(
        Blake3.hex(r.getStderr().toByteArray()), core.at("/outputs/stderr/address").textValue());

    SubmitReply noStdin = submit(List.of("prog", "cat"), null);
    assertTrue(attestationCore(noStdin).at("/inputs/stdin").isNull());
    SubmitReply empty = submit(List.of("prog", "cat"), new byte[0]);
    assertEquals(
        Blake3.hex(new byte[0]), attestationCore(empty).at("/inputs/stdin/address").textValue());
  }

  @Test
  void theExitCodeIsTheGuestsStatusAndAbove255ItIs255() throws Exception {
    DaemonProcess.Result seven = cli(null, "--", "exit", "7");
    assertEquals(7, seven.exit(), seven.err());
    assertEquals("bye\n", seven.out());
    assertTrue(seven.err().startsWith("err\n"), seven.err());
    assertTrue(seven.err().contains("exit status 7"), seven.err());

    DaemonProcess.Result big = cli(null, "--", "exit", "300");
    assertEquals(255, big.exit(), big.err());
    assertTrue(big.err().contains("exit status 300 is above 255"), big.err());
    DaemonProcess.Result wraps = cli(null, "--", "exit", "256");
    assertEquals(255, wraps.exit(), "256 must not read as success: " + wraps.err());

    SubmitReply r = submit(List.of("prog", "exit", "4294967295"), null);
    assertTrue(r.getExited());
    assertEquals(4_294_967_295L, Integer.toUnsignedLong(r.getExitStatus()));
    assertEquals("{\"Failed\":{\"reason\":\"exit status 4294967295\"}}", r.getOutcomeJson());

    DaemonProcess.Result json = cli(null, "--json", "--", "exit", "300");
    assertEquals(255, json.exit(), json.err());
    JsonNode o = CanonicalJson.parse(json.out().strip());
    assertEquals(300, o.get("exit_status").longValue());
    assertEquals("bye\n", o.at("/stdout/text").textValue());
    assertEquals("err\n", o.at("/stderr/text").textValue());
    assertTrue(o.get("exited").booleanValue());
  }

  @Test
  void aProgramThatWritesPastTheCapIsCutAndTheDaemonCarriesOn() throws Exception {
    DaemonProcess.Result r = cli(null, "--", "spew", "5000000");
    assertEquals(0, r.exit(), r.err());
    assertEquals("x".repeat(STDOUT_CAP), r.out());
    assertTrue(
        r.err().contains("truncated at the node's cap of 4096 bytes; the unit wrote 5000000"),
        r.err());
    String runId = r.err().replaceAll("(?s).*run ([0-9a-f]{20}) outcome.*", "$1");
    DaemonProcess.Result later = daemon.ctl("runs", "output", runId);
    assertEquals(0, later.exit(), later.err());
    assertEquals("x".repeat(STDOUT_CAP), later.out());
    assertTrue(
        later.err().contains("truncated at 4096 bytes; the unit wrote 5000000"), later.err());
    DaemonProcess.Result err = daemon.ctl("runs", "output", runId, "--stderr");
    assertEquals("spewed\n", err.out());
    RunInfo info = client.stub().getRun(GetRunRequest.newBuilder().setRunId(runId).build());
    JsonNode io = CanonicalJson.parse(info.getIoJson());
    assertEquals(5_000_000, io.at("/stdout/written").longValue());
    assertEquals(STDOUT_CAP, io.at("/stdout/bytes").longValue());
    assertTrue(daemon.process.isAlive());
  }

  @Test
  void aProgramThatKeepsReadingStdinEndsAtEof() throws Exception {
    DaemonProcess.Result r = cli("twelve bytes".getBytes(UTF_8), "--stdin", "-", "--", "drain");
    assertEquals(0, r.exit(), r.err());
    assertEquals("total=12 eofs=99999\n", r.out());
  }

  @Test
  void badArgumentsAndStdinAreRefusedNamingWhatIsWrong() {
    StatusRuntimeException nul =
        assertThrows(StatusRuntimeException.class, () -> submit(List.of("prog", "a\0b"), null));
    assertEquals(Status.Code.INVALID_ARGUMENT, nul.getStatus().getCode());
    assertTrue(nul.getStatus().getDescription().contains("args[1]"), nul.getMessage());

    List<String> many = new ArrayList<>();
    for (int i = 0; i < 17; i++) {
      many.add("a");
    }
    StatusRuntimeException count =
        assertThrows(StatusRuntimeException.class, () -> submit(many, null));
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, count.getStatus().getCode());
    assertTrue(
        count.getStatus().getDescription().contains("io.args_max_count"), count.getMessage());

    StatusRuntimeException bytes =
        assertThrows(
            StatusRuntimeException.class, () -> submit(List.of("prog", "y".repeat(2000)), null));
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, bytes.getStatus().getCode());
    assertTrue(
        bytes.getStatus().getDescription().contains("io.args_max_bytes"), bytes.getMessage());

    StatusRuntimeException stdin =
        assertThrows(
            StatusRuntimeException.class,
            () -> submit(List.of("prog", "cat"), new byte[STDIN_CAP + 1]));
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, stdin.getStatus().getCode());
    assertTrue(
        stdin.getStatus().getDescription().contains("io.stdin_max_bytes"), stdin.getMessage());

    // Invalid UTF-8 in an argument: a string field protobuf itself cannot carry, sent raw.
    SubmitRequest raw =
        SubmitRequest.newBuilder()
            .setModule(ByteString.copyFrom(module))
            .setGrantsJson(GRANTS)
            .addArgs("prog")
            .setUnknownFields(
                UnknownFieldSet.newBuilder()
                    .addField(
                        5,
                        UnknownFieldSet.Field.newBuilder()
                            .addLengthDelimited(ByteString.copyFrom(new byte[] {'o', (byte) 0xC3}))
                            .build())
                    .build())
            .build();
    StatusRuntimeException utf8 =
        assertThrows(
            StatusRuntimeException.class,
            () -> client.stub().withDeadlineAfter(60, TimeUnit.SECONDS).submit(raw));
    assertEquals(Status.Code.INVALID_ARGUMENT, utf8.getStatus().getCode(), utf8.getMessage());
    assertTrue(utf8.getStatus().getDescription().contains("args[1]"), utf8.getMessage());
    assertTrue(daemon.process.isAlive());
  }

  @Test
  void aUnitWithoutWasiIsRefusedArguments() throws Exception {
    byte[] plain =
        com.dylibso.chicory.wabt.Wat2Wasm.parse(
            "(module (func (export \"run\") (result i32) (i32.const 0)))");
    StatusRuntimeException e =
        Submissions.refused(
            client,
            SubmitRequest.newBuilder()
                .setModule(ByteString.copyFrom(plain))
                .setGrantsJson(GRANTS)
                .addAllArgs(List.of("plain", "x"))
                .build());
    assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
    assertTrue(e.getStatus().getDescription().contains("imports no WASI"), e.getMessage());
    // argv[0] alone (what sandboxctl always sends) is a name, not an input: it runs.
    Path p = Files.write(dir.resolve("plain.wasm"), plain);
    DaemonProcess.Result r = daemon.ctl("run", p.toString(), "--grants", grants.toString());
    assertEquals(0, r.exit(), r.err());
    assertFalse(r.err().contains("io "), r.err());
  }

  @Test
  void aReplayOfARunWithArgsAndStdinMatchesAndItsOutputIsKept() {
    byte[] in = "line one\nline two\n".getBytes(UTF_8);
    SubmitReply r = submit(List.of("prog", "cat"), in);
    assertEquals("\"Completed\"", r.getOutcomeJson(), r.getLog());
    ReplayReply v = Submissions.replay(client, r.getRunId());
    assertTrue(v.getMatches(), v.getDivergence());
    assertEquals(r.getOutcomeJson(), v.getReplayedOutcome());

    SubmitReply echo = submit(List.of("prog", "echo", "ünï", "x y"), null);
    ReplayReply e = Submissions.replay(client, echo.getRunId());
    assertTrue(e.getMatches(), e.getDivergence());

    var out = client.stub().getOutput(GetOutputRequest.newBuilder().setRunId(r.getRunId()).build());
    assertArrayEquals(in, out.getData().toByteArray());
    assertEquals(Blake3.hex(in), out.getAddress());
    var err =
        client
            .stub()
            .getOutput(
                GetOutputRequest.newBuilder().setRunId(r.getRunId()).setStderr(true).build());
    assertEquals("read " + in.length + " bytes\n", err.getData().toStringUtf8());
    StatusRuntimeException missing =
        assertThrows(
            StatusRuntimeException.class,
            () -> client.stub().getOutput(GetOutputRequest.newBuilder().setRunId("nope").build()));
    assertEquals(Status.Code.NOT_FOUND, missing.getStatus().getCode());
  }
}
