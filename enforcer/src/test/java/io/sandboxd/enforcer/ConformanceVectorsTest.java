package io.sandboxd.enforcer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.Blake3;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.DeviceClass;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.function.ThrowingConsumer;
import org.junit.jupiter.api.io.TempDir;

/** Runs every case of the conformance vector files under conformance/ (no skips). */
class ConformanceVectorsTest {
  @TempDir Path tmp;

  static Path conformanceDir() {
    String root = System.getProperty("sandboxd.root");
    Path dir = root != null ? Paths.get(root, "conformance") : Paths.get("..", "conformance");
    if (!Files.isDirectory(dir)) {
      dir = Paths.get("..", "conformance");
    }
    assertTrue(Files.isDirectory(dir), "conformance vectors not found at " + dir.toAbsolutePath());
    return dir;
  }

  static List<JsonNode> cases(String file) throws IOException {
    JsonNode all = CanonicalJson.parse(Files.readAllBytes(conformanceDir().resolve(file)));
    assertTrue(all.isArray() && all.size() > 0, file + " must be a non-empty array");
    List<JsonNode> out = new ArrayList<>();
    all.forEach(out::add);
    Set<String> names = new HashSet<>();
    for (JsonNode c : out) {
      assertTrue(names.add(c.get("name").textValue()), "duplicate case name " + c.get("name"));
    }
    return out;
  }

  @Test
  void everyVectorFileIsRunByThisHarness() throws IOException {
    Set<String> known =
        Set.of(
            "c02-capability.json",
            "c02-acceptance.json",
            "c02-grants-refused.json",
            "c02-grants-id.json",
            "c08-exec.json",
            "c13-taint.json");
    try (Stream<Path> files = Files.list(conformanceDir())) {
      files
          .map(p -> p.getFileName().toString())
          .filter(n -> n.endsWith(".json"))
          .forEach(n -> assertTrue(known.contains(n), n + " has no runner in this harness"));
    }
  }

  @TestFactory
  Stream<DynamicTest> c02Capability() throws IOException {
    return runs("c02-capability.json", this::runCase);
  }

  @TestFactory
  Stream<DynamicTest> c13Taint() throws IOException {
    return runs("c13-taint.json", this::runCase);
  }

  @TestFactory
  Stream<DynamicTest> c08Exec() throws IOException {
    return runs("c08-exec.json", this::runCase);
  }

  /** One dynamic test per case of {@code file}, named by the case, running {@code check} on it. */
  private static Stream<DynamicTest> runs(String file, ThrowingConsumer<JsonNode> check)
      throws IOException {
    return cases(file).stream()
        .map(c -> DynamicTest.dynamicTest(c.get("name").textValue(), () -> check.accept(c)));
  }

  private void runCase(JsonNode c) throws IOException {
    String name = c.get("name").textValue();
    Grants grants = Grants.parse(c.get("grants"));
    Set<String> denylist = new HashSet<>();
    if (c.has("denylist")) {
      c.get("denylist").forEach(d -> denylist.add(d.textValue()));
    }
    Optional<ProgramResolver> resolver = Optional.empty();
    if (c.has("files")) {
      Path root = Files.createTempDirectory(tmp, "root");
      materialize(root, c.get("files"));
      List<String> search = new ArrayList<>();
      c.get("search_path").forEach(s -> search.add(s.textValue()));
      resolver = Optional.of(new ProgramResolver(root, search));
    }
    QueryRunner run = new QueryRunner(new Enforcer(grants, denylist), resolver);
    JsonNode queries = c.get("queries");
    JsonNode expected = c.get("expected");
    assertEquals(queries.size(), expected.size(), name + ": queries and expected differ in length");
    assertTrue(queries.size() > 0, name + ": no queries");
    for (int i = 0; i < queries.size(); i++) {
      String where = name + " step " + i + " " + queries.get(i);
      JsonNode out = CanonicalJson.parse(run.answer(queries.get(i)));
      JsonNode want = expected.get(i);
      if (want.has("error")) {
        assertTrue(out.has("error"), where + ": expected an error, got " + out);
        assertTrue(
            out.get("error").textValue().contains(want.get("error").textValue()),
            where + ": error " + out.get("error") + " does not name " + want.get("error"));
        continue;
      }
      assertTrue(out.has("decision"), where + ": expected a decision, got " + out);
      assertEquals(
          want.get("decision").textValue(), out.get("decision").textValue(), where + " -> " + out);
      if (want.has("taint")) {
        assertEquals(want.get("taint"), out.get("taint"), where + ": taint");
      }
      if (!"Allow".equals(want.get("decision").textValue())) {
        assertTrue(!out.get("reason").textValue().isEmpty(), where + ": a refusal has a reason");
      }
    }
  }

  private static void materialize(Path root, JsonNode files) throws IOException {
    for (Iterator<Map.Entry<String, JsonNode>> it = files.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      Path p = root.resolve(e.getKey().substring(1));
      Files.createDirectories(p.getParent());
      if (e.getValue().isTextual()) {
        Files.write(p, e.getValue().textValue().getBytes(StandardCharsets.UTF_8));
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
      } else {
        // an absolute target means "inside the unit's root": link relatively so the fixture stays
        // inside the temporary directory
        Path target = root.resolve(e.getValue().get("symlink").textValue().substring(1));
        Files.createSymbolicLink(p, p.getParent().relativize(target));
      }
    }
  }

  @TestFactory
  Stream<DynamicTest> c02Acceptance() throws IOException {
    return runs("c02-acceptance.json", ConformanceVectorsTest::c02AcceptanceCase);
  }

  private static void c02AcceptanceCase(JsonNode c) throws IOException {
    JsonNode h = c.get("host");
    HostProfile host =
        new HostProfile(
            Tier.valueOf(h.get("tier").textValue()),
            classes(h.get("confinable")),
            classes(h.get("meterable")));
    Acceptance a = GrantAcceptance.decide(Grants.parse(c.get("grants")), host);
    JsonNode want = c.get("expected");
    if (want.has("accepted")) {
      Acceptance.Accepted ok = assertInstanceOf(Acceptance.Accepted.class, a);
      assertEquals(want.get("accepted").textValue(), ok.tier().name());
    } else {
      Acceptance.Declined no = assertInstanceOf(Acceptance.Declined.class, a);
      assertTrue(
          no.reason().contains(want.get("declined").textValue()),
          no.reason() + " should mention " + want.get("declined"));
    }
  }

  private static Set<DeviceClass> classes(JsonNode arr) {
    Set<DeviceClass> out = EnumSet.noneOf(DeviceClass.class);
    arr.forEach(n -> out.add(DeviceClass.fromJson(n.textValue())));
    return out;
  }

  @TestFactory
  Stream<DynamicTest> c02GrantsRefused() throws IOException {
    return runs("c02-grants-refused.json", ConformanceVectorsTest::c02GrantsRefusedCase);
  }

  private static void c02GrantsRefusedCase(JsonNode c) throws IOException {
    byte[] text = c.get("grants_text").textValue().getBytes(StandardCharsets.UTF_8);
    GrantsException e = assertThrows(GrantsException.class, () -> Grants.parse(text));
    assertEquals(c.get("error_path").textValue(), e.path(), e.getMessage());
    assertTrue(e.getMessage().startsWith(e.path() + ": "), e.getMessage());
  }

  @TestFactory
  Stream<DynamicTest> c02GrantsId() throws IOException {
    return runs("c02-grants-id.json", ConformanceVectorsTest::c02GrantsIdCase);
  }

  private static void c02GrantsIdCase(JsonNode c) throws IOException {
    String canonical = c.get("canonical").textValue();
    String id =
        c.has("grants_id")
            ? c.get("grants_id").textValue()
            : Blake3.hex(canonical.getBytes(StandardCharsets.UTF_8));
    assertTrue(c.get("variants").size() > 0);
    for (JsonNode v : c.get("variants")) {
      Grants g = Grants.parse(v.textValue().getBytes(StandardCharsets.UTF_8));
      assertEquals(
          canonical, new String(g.canonicalBytes(), StandardCharsets.UTF_8), "variant " + v);
      assertEquals(id, g.grantsId(), "variant " + v);
      // the canonical form is a fixed point
      assertEquals(id, Grants.parse(g.canonicalBytes()).grantsId());
    }
  }
}
