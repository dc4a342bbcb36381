package io.sandboxd.daemon.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.dylibso.chicory.wabt.Wat2Wasm;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.config.DaemonConfig;
import io.sandboxd.executor.UnitCompiler;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Admission#admit(Caller, Submission)}: every check in one place, each refusal naming its
 * field or rule, and a refused submission never keeps the caller's run slot.
 */
class AdmissionTest {
  static final String NO_WASI =
      "(module (memory (export \"memory\") 1) (func (export \"run\") (result i32) (i32.const 0)))";

  static final String GRANTS = RunSupervisorTest.grants("[]", RunSupervisorTest.ALL_HOST);

  @TempDir Path dir;
  Admission admission;
  Caller alice = new Caller(1000, 1000, 4242);

  @BeforeEach
  void admission() throws Exception {
    Path passwd = dir.resolve("passwd");
    Path group = dir.resolve("group");
    Files.writeString(passwd, "alice:x:1000:1000::/home/alice:/bin/sh\n");
    Files.writeString(group, "alice:x:1000:\n");
    DaemonConfig config =
        DaemonConfig.parse(
            ("{\"max_concurrent_units\":4,\"io\":{\"args_max_count\":3},\"policy\":{\"rules\":"
                    + "[{\"name\":\"one-at-a-time\",\"uids\":[1000],\"max_concurrent_runs\":1,"
                    + "\"ceiling\":\"unrestricted\"}]}}")
                .getBytes(StandardCharsets.UTF_8));
    admission =
        new Admission(
                new UnitCompiler(4),
                Set.of(DeviceClass.Cpu),
                io.sandboxd.enforcer.SecretBindings.none(),
                SubmitterPolicy.resolve(config.policy(), Accounts.read(passwd, group)))
            .offering(OfferedEnvironments.none(), config.io());
  }

  private Submission submission(List<String> args, String env) {
    return new Submission(
        Wat2Wasm.parse(NO_WASI),
        GRANTS,
        "",
        env,
        new CommandInput(args, Optional.empty()),
        null,
        false,
        null);
  }

  /** Whether alice's one run slot is free: an admitted submission takes it, closing frees it. */
  private void assertSlotFree() {
    try (AdmittedRun run = admission.admit(alice, submission(List.of("unit"), ""))) {
      assertEquals(Optional.of(1000L), run.submitterUid().stream().boxed().findFirst());
      assertThrows(
          PolicyLimitException.class,
          () -> admission.admit(alice, submission(List.of("unit"), "")).close());
    }
  }

  @Test
  void eachRefusalNamesItsFieldAndLeavesTheSlotFree() {
    // The io caps, before the policy or the compiler is asked.
    InputTooLargeException tooMany =
        assertThrows(
            InputTooLargeException.class,
            () -> admission.admit(alice, submission(List.of("a", "b", "c", "d"), "")));
    assertTrue(tooMany.getMessage().contains("io.args_max_count = 3"), tooMany.getMessage());
    // An environment the node does not offer.
    RuntimeException env =
        assertThrows(
            RuntimeException.class,
            () -> admission.admit(alice, submission(List.of("unit"), "no-such-env")));
    assertTrue(env.getMessage().contains("no-such-env"), env.getMessage());
    // Checked after compiling (it needs the module's imports), with the slot already taken.
    AdmissionException args =
        assertThrows(
            AdmissionException.class,
            () -> admission.admit(alice, submission(List.of("unit", "x"), "")));
    assertTrue(args.getMessage().startsWith("args: the unit imports no WASI"), args.getMessage());
    assertSlotFree();
    // A caller no rule names is refused before anything is compiled.
    assertThrows(
        PolicyDeniedException.class,
        () -> admission.admit(new Caller(7, 7, 1), submission(List.of("unit"), "")));
    assertSlotFree();
  }

  @Test
  void grantsAreParsedOnceByTextAndARefusedTextIsRefusedEveryTime() {
    byte[] module = Wat2Wasm.parse(NO_WASI);
    Admission.Admitted a = admission.admit(module, GRANTS, "");
    Admission.Admitted b = admission.admit(module, GRANTS, "");
    assertTrue(a.grants() == b.grants(), "the same text reuses its parsed grants");
    // A text one byte apart is its own document, parsed on its own.
    String spaced = GRANTS + " ";
    assertEquals(a.grants(), admission.admit(module, spaced, "").grants());
    String bad = GRANTS.replace("\"compute\"", "\"compute_typo\"");
    AdmissionException first =
        assertThrows(AdmissionException.class, () -> admission.admit(module, bad, ""));
    AdmissionException again =
        assertThrows(AdmissionException.class, () -> admission.admit(module, bad, ""));
    assertTrue(first.getMessage().startsWith("grants: "), first.getMessage());
    assertEquals(first.getMessage(), again.getMessage());
    // Many distinct texts: every one still parses to what it says, past the bound on kept texts.
    for (int i = 0; i < 600; i++) {
      String text = GRANTS + " ".repeat(i % 7) + "\n".repeat(i / 7);
      assertEquals(a.grants(), admission.admit(module, text, "").grants(), "text " + i);
    }
  }

  @Test
  void withoutACallerNoPolicyAppliesAndNoUidIsRecorded() {
    try (AdmittedRun a = admission.admit(submission(List.of("unit"), ""));
        AdmittedRun b = admission.admit(submission(List.of("unit"), ""))) {
      assertTrue(a.submitterUid().isEmpty());
      assertEquals("run", b.admitted().entry());
    }
  }

  @Test
  void theGrantsFormTakenAtAdmissionIsTheGrantsOwn() {
    byte[] module = Wat2Wasm.parse(NO_WASI);
    Admission.Admitted a = admission.admit(module, GRANTS, "");
    assertEquals(a.grants().grantsId(), a.grantsId());
    // Taken once per grant document: a second admission of the same text reuses it.
    assertTrue(a.canonical() == admission.admit(module, GRANTS, "").canonical());
    assertEquals(
        io.sandboxd.attest.CanonicalJson.canonicalString(a.grants().canonicalTree()),
        a.grantsCanonical());
    // An amendment's grants get their own form, not the first one's.
    io.sandboxd.enforcer.Grants narrower = io.sandboxd.enforcer.Grants.empty();
    Admission.Admitted amended = a.withGrants(narrower);
    assertEquals(narrower.grantsId(), amended.grantsId());
    assertTrue(!amended.grantsId().equals(a.grantsId()));
    assertEquals(
        new String(narrower.canonicalBytes(), StandardCharsets.UTF_8), amended.grantsCanonical());
  }
}
