package io.sandboxd.enforcer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Seeded;
import io.sandboxd.attest.VectorFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The attenuation order: the checked-in vectors (and that they are what {@link AttenuationCases}
 * generates), seeded random narrowings (always ⊑) and widenings (refused, naming the part), and the
 * soundness of glob coverage against paths drawn from the narrower glob.
 */
class AttenuationTest {

  static Path vectorFile() {
    return VectorFiles.path("attenuation/vectors.json");
  }

  /**
   * The file is generated from the case table; {@code -Dsandboxd.vectors.write=true} rewrites it.
   */
  @Test
  void vectorFileIsWhatTheTableGenerates() throws IOException {
    VectorFiles.assertGenerated(
        vectorFile(), new String(AttenuationCases.fileBytes(), StandardCharsets.UTF_8));
  }

  @TestFactory
  Stream<DynamicTest> vectors() throws IOException {
    JsonNode all = CanonicalJson.parse(Files.readAllBytes(vectorFile()));
    assertTrue(all.isArray() && all.size() >= 40, "too few attenuation vectors");
    List<DynamicTest> tests = new ArrayList<>();
    for (JsonNode c : all) {
      tests.add(
          DynamicTest.dynamicTest(
              c.get("name").textValue(),
              () -> {
                Grants child = Grants.parse(c.get("child"));
                Grants parent = Grants.parse(c.get("parent"));
                JsonNode want = c.get("expected");
                Attenuation.Verdict v = Attenuation.check(child, parent);
                if (want.get("attenuates").booleanValue()) {
                  assertInstanceOf(Attenuation.Narrower.class, v, c.get("name") + " -> " + v);
                } else {
                  Attenuation.Wider w = assertInstanceOf(Attenuation.Wider.class, v);
                  assertEquals(want.get("widens").textValue(), w.path(), w.toString());
                  assertTrue(!w.reason().isEmpty());
                }
              }));
    }
    return tests.stream();
  }

  // ---- seeded random grants ----

  private static final String[] SEGMENTS = {"a", "b", "data", "x.txt", "cfg"};

  static Glob randomGlob(Seeded g) {
    List<String> segs =
        g.list(1, 4, () -> g.pick("a", "b", "data", "*", "**", "*.txt", "x.txt", "a*"));
    return Glob.parse((g.chance(0.2) ? "/" : "") + String.join("/", segs));
  }

  static Grants randomParent(Seeded g) {
    EnumSet<DeviceClass> devices = EnumSet.noneOf(DeviceClass.class);
    for (DeviceClass d : DeviceClass.values()) {
      if (g.chance(0.3)) {
        devices.add(d);
      }
    }
    List<Endpoint> out = new ArrayList<>();
    for (String h : List.of("a.example:443", "b.example:80", "[::1]:8080")) {
      if (g.bool()) {
        out.add(Endpoint.parse(h));
      }
    }
    List<Bytes> prefixes = new ArrayList<>();
    if (g.bool()) {
      prefixes.add(Bytes.of(new byte[] {'u', '/'}));
    }
    Optional<ProcessGrant> process =
        g.bool()
            ? Optional.of(
                new ProcessGrant(
                    true,
                    List.of(new ProgramRef("ls"), new ProgramRef("cat")),
                    g.longBetween(1, 8)))
            : Optional.empty();
    Optional<BrowserGrant> browser =
        g.bool()
            ? Optional.of(
                new BrowserGrant(true, List.of(Origin.parse("https://a.example")), g.bool()))
            : Optional.empty();
    Optional<DisplayGrant> display =
        g.bool()
            ? Optional.of(new DisplayGrant(true, g.bool(), g.longBetween(1, 4096), 768))
            : Optional.empty();
    return new Grants(
        new ComputeGrant(
            devices,
            g.longBetween(0, 1L << 40),
            g.longBetween(0, 100_000),
            g.longBetween(0, 1 << 30)),
        new StorageGrant(
            g.list(0, 3, () -> randomGlob(g)),
            g.list(0, 3, () -> randomGlob(g)),
            g.list(0, 2, () -> randomGlob(g)),
            g.bool() ? OptionalLong.of(g.longBetween(1, 1000)) : OptionalLong.empty(),
            g.bool() ? OptionalLong.of(g.longBetween(1, 1 << 20)) : OptionalLong.empty()),
        new NetworkGrant(out, g.bool(), List.of()),
        new KvGrant(g.bool(), g.bool(), prefixes),
        new HostGrant(g.bool(), g.bool(), g.bool(), g.bool()),
        process,
        browser,
        display,
        Optional.empty());
  }

  /** A glob every path of which the given one matches, by one random narrowing step. */
  static Glob narrowGlob(Seeded g, Glob parent) {
    String t = parent.text();
    boolean abs = t.startsWith("/");
    boolean trailingStar = t.endsWith("/*");
    List<String> segs = new ArrayList<>(List.of((abs ? t.substring(1) : t).split("/")));
    int i = g.intBetween(0, segs.size() - 1);
    String s = segs.get(i);
    if (s.equals("**")) {
      // zero, one or two concrete segments in its place
      segs.remove(i);
      int k = g.intBetween(0, 2);
      for (int j = 0; j < k; j++) {
        segs.add(i, g.pick(SEGMENTS));
      }
    } else if (s.equals("*")) {
      segs.set(i, g.pick("a", "x.txt", "a*", "*.txt"));
      if (trailingStar && i == segs.size() - 1 && g.bool()) {
        segs.add("**"); // reading B: a trailing "/*" reaches any depth; so may its narrowing
      }
    } else if (s.contains("*")) {
      segs.set(i, s.replace("*", g.pick("", "q", "zz")));
    } else if (t.endsWith("/**") && g.bool()) {
      segs.add(g.pick(SEGMENTS)); // "p/**" covers "p/**/x"
    }
    if (segs.isEmpty()) {
      return parent;
    }
    return Glob.parse((abs ? "/" : "") + String.join("/", segs));
  }

  static Grants narrow(Seeded g, Grants p) {
    ComputeGrant c = p.compute();
    EnumSet<DeviceClass> devices = EnumSet.noneOf(DeviceClass.class);
    c.devices().stream().filter(d -> g.bool()).forEach(devices::add);
    if (g.bool()) {
      devices.add(DeviceClass.Cpu);
    }
    StorageGrant s = p.storage();
    return new Grants(
        new ComputeGrant(
            devices,
            g.longBetween(0, c.energyBudgetUj()),
            g.longBetween(0, c.cpuTimeMs()),
            g.longBetween(0, c.memoryBytes())),
        new StorageGrant(
            narrowGlobs(g, s.read()),
            narrowGlobs(g, s.write()),
            narrowGlobs(g, s.delete()),
            s.maxIops().isPresent()
                ? OptionalLong.of(g.longBetween(0, s.maxIops().getAsLong()))
                : (g.bool() ? OptionalLong.of(5) : OptionalLong.empty()),
            s.maxReadBps().isPresent()
                ? OptionalLong.of(g.longBetween(0, s.maxReadBps().getAsLong()))
                : OptionalLong.empty()),
        new NetworkGrant(
            p.network().outbound().stream().filter(e -> g.bool()).toList(),
            p.network().inbound() && g.bool(),
            List.of()),
        new KvGrant(
            p.kv().read() && g.bool(),
            p.kv().write() && g.bool(),
            p.kv().prefixes().isEmpty()
                ? (g.bool() ? List.of(Bytes.of(new byte[] {1})) : List.of())
                : List.of(Bytes.of(new byte[] {'u', '/', 'x'}))),
        new HostGrant(
            p.host().logging() && g.bool(),
            p.host().clock() && g.bool(),
            p.host().random() && g.bool(),
            p.host().inference() && g.bool()),
        p.process()
            .map(
                x ->
                    new ProcessGrant(
                        g.bool(),
                        x.programs().stream().filter(q -> g.bool()).toList(),
                        g.longBetween(0, x.maxProcesses()))),
        p.browser()
            .map(
                b ->
                    new BrowserGrant(
                        g.bool(),
                        b.origins().stream().filter(o -> g.bool()).toList(),
                        b.headless() || g.bool())),
        p.display()
            .map(
                d ->
                    new DisplayGrant(
                        g.bool(),
                        d.vnc() && g.bool(),
                        g.longBetween(0, d.maxWidth()),
                        g.longBetween(0, d.maxHeight()))),
        Optional.empty());
  }

  private static List<Glob> narrowGlobs(Seeded g, List<Glob> parent) {
    List<Glob> out = new ArrayList<>();
    for (Glob x : parent) {
      if (g.chance(0.8)) {
        out.add(narrowGlob(g, x));
      }
    }
    return out;
  }

  @Test
  void aRandomNarrowingAttenuates() {
    Seeded.repeat(
        2000,
        g -> {
          Grants parent = randomParent(g);
          Grants child = narrow(g, parent);
          Attenuation.Verdict v = Attenuation.check(child, parent);
          assertInstanceOf(
              Attenuation.Narrower.class,
              v,
              "child " + CanonicalJson.canonicalString(child.canonicalTree()) + " -> " + v);
          assertInstanceOf(Attenuation.Narrower.class, Attenuation.check(parent, parent));
        });
  }

  /** One widening of a narrowed child, and the path the refusal must name. */
  record Widening(Grants child, String path) {}

  static Widening widen(Seeded g, Grants parent, Grants child) {
    ComputeGrant c = child.compute();
    ComputeGrant pc = parent.compute();
    StorageGrant s = child.storage();
    int pick = g.intBetween(0, 9);
    switch (pick) {
      case 0:
        {
          return new Widening(
              with(
                  child,
                  new ComputeGrant(
                      c.devices(), c.energyBudgetUj(), pc.cpuTimeMs() + 1, c.memoryBytes())),
              "$.compute.cpu_time_ms");
        }
      case 1:
        {
          for (DeviceClass d : DeviceClass.values()) {
            if (d != DeviceClass.Cpu && !pc.devices().contains(d)) {
              EnumSet<DeviceClass> more = EnumSet.copyOf(Set.of(d));
              more.addAll(c.devices());
              return new Widening(
                  with(
                      child,
                      new ComputeGrant(more, c.energyBudgetUj(), c.cpuTimeMs(), c.memoryBytes())),
                  "$.compute.devices[");
            }
          }
          break;
        }
      case 2:
        return new Widening(
            with(
                child,
                new ComputeGrant(
                    c.devices(), c.energyBudgetUj(), c.cpuTimeMs(), pc.memoryBytes() + 1)),
            "$.compute.memory_bytes");
      case 3:
        {
          // a path no parent glob can reach: a fresh top-level name
          List<Glob> read = new ArrayList<>(s.read());
          String fresh = "zz-" + g.intBetween(0, 9) + "/f";
          read.add(Glob.parse(fresh));
          // no parent glob matches this path, so none can cover a glob that does
          if (parent.storage().read().stream().anyMatch(x -> x.matches(fresh))) {
            break;
          }
          return new Widening(
              with(
                  child,
                  new StorageGrant(read, s.write(), s.delete(), s.maxIops(), s.maxReadBps())),
              "$.storage.read[");
        }
      case 4:
        {
          if (parent.storage().maxReadBps().isEmpty()) {
            break;
          }
          return new Widening(
              with(
                  child,
                  new StorageGrant(
                      s.read(), s.write(), s.delete(), s.maxIops(), OptionalLong.empty())),
              "$.storage.max_read_bps");
        }
      case 5:
        {
          if (parent.host().clock()) {
            break;
          }
          HostGrant h = child.host();
          return new Widening(
              with(child, new HostGrant(h.logging(), true, h.random(), h.inference())),
              "$.host.clock");
        }
      case 6:
        {
          List<Endpoint> out = new ArrayList<>(child.network().outbound());
          out.add(Endpoint.parse("evil.example:443"));
          return new Widening(
              with(child, new NetworkGrant(out, child.network().inbound(), List.of())),
              "$.network.outbound[");
        }
      case 7:
        {
          if (parent.process().isPresent()) {
            ProcessGrant p = parent.process().get();
            List<ProgramRef> progs = new ArrayList<>(p.programs());
            progs.add(new ProgramRef("sh"));
            return new Widening(
                with(child, new ProcessGrant(true, progs, p.maxProcesses())),
                "$.process.programs[");
          }
          return new Widening(with(child, new ProcessGrant(true, List.of(), 0)), "$.process.exec");
        }
      case 8:
        {
          if (parent.kv().write()) {
            break;
          }
          KvGrant k = child.kv();
          return new Widening(with(child, new KvGrant(k.read(), true, k.prefixes())), "$.kv.write");
        }
      default:
        {
          if (parent.network().inbound()) {
            break;
          }
          return new Widening(
              with(
                  child,
                  new NetworkGrant(
                      child.network().outbound(), true, child.network().credentials())),
              "$.network.inbound");
        }
    }
    return null;
  }

  @Test
  void aRandomWideningIsRefusedNamingThePart() {
    int[] tried = {0};
    Seeded.repeat(
        2000,
        g -> {
          Grants parent = randomParent(g);
          // widen a parent-equal child, so the widened part is the only one (and so the first)
          Widening w = widen(g, parent, parent);
          if (w == null) {
            return;
          }
          tried[0]++;
          Attenuation.Verdict v = Attenuation.check(w.child(), parent);
          Attenuation.Wider wider =
              assertInstanceOf(
                  Attenuation.Wider.class,
                  v,
                  "widened at "
                      + w.path()
                      + ": "
                      + CanonicalJson.canonicalString(w.child().canonicalTree()));
          assertTrue(wider.path().startsWith(w.path()), "expected " + w.path() + ", got " + wider);
        });
    assertTrue(tried[0] > 1000, "only " + tried[0] + " widenings tried");
  }

  /** Whatever glob pairs are drawn, "covers" is never generous: sampled paths confirm it. */
  @Test
  void globCoverageIsSound() {
    int[] covered = {0};
    Seeded.repeat(
        5000,
        g -> {
          Glob parent = randomGlob(g);
          Glob child = g.bool() ? narrowGlob(g, parent) : randomGlob(g);
          if (!parent.covers(child)) {
            return;
          }
          covered[0]++;
          for (int k = 0; k < 20; k++) {
            String path = samplePath(g, child);
            assertTrue(child.matches(path), "sample " + path + " of " + child);
            assertTrue(
                parent.matches(path), parent + " covers " + child + " but does not match " + path);
          }
        });
    assertTrue(covered[0] > 1500, "only " + covered[0] + " covered pairs");
  }

  @Test
  void narrowingsOfAGlobAreCovered() {
    Seeded.repeat(
        3000,
        g -> {
          Glob parent = randomGlob(g);
          Glob child = narrowGlob(g, parent);
          assertTrue(parent.covers(child), parent + " should cover " + child);
        });
  }

  /** A path the glob matches, built from its own text (reading B for a trailing "/*"). */
  static String samplePath(Seeded g, Glob glob) {
    String t = glob.text();
    boolean abs = t.startsWith("/");
    String[] segs = (abs ? t.substring(1) : t).split("/");
    List<String> out = new ArrayList<>();
    for (String s : segs) {
      if (s.equals("**")) {
        int k = g.intBetween(0, 2);
        for (int j = 0; j < k; j++) {
          out.add(g.pick("a", "b", "x.txt", "q"));
        }
      } else if (s.contains("*")) {
        String r = s.replace("*", g.pick("", "a", "zz"));
        out.add(r.isEmpty() ? "e" : r);
      } else {
        out.add(s);
      }
    }
    if (t.endsWith("/*")) {
      int k = g.intBetween(0, 2);
      for (int j = 0; j < k; j++) {
        out.add(g.pick("a", "x.txt"));
      }
    }
    if (out.isEmpty()) {
      out.add("a"); // "**" alone matches any path, so any path is a sample
    }
    return (abs ? "/" : "") + String.join("/", out);
  }

  /** {@code g} with the one part {@code part} is (its type says which) put in its place. */
  static Grants with(Grants g, Object part) {
    return new Grants(
        part instanceof ComputeGrant c ? c : g.compute(),
        part instanceof StorageGrant s ? s : g.storage(),
        part instanceof NetworkGrant n ? n : g.network(),
        part instanceof KvGrant k ? k : g.kv(),
        part instanceof HostGrant h ? h : g.host(),
        part instanceof ProcessGrant p ? Optional.of(p) : g.process(),
        g.browser(),
        g.display(),
        g.flow());
  }

  /**
   * A grant set that grants something in every part, more than {@link #NARROW} does. A new part of
   * {@link Grants} must be given a value in both, and its check in {@link Attenuation#check}: the
   * test below fails until all three exist.
   */
  static final String EVERY_PART =
      "{\"browser\":{\"enabled\":true,\"headless\":false,\"origins\":[\"https://a.example\"]},"
          + "\"compute\":{\"cpu_time_ms\":10,\"devices\":[\"Cpu\",\"Gpu\"],"
          + "\"energy_budget_uj\":10,\"memory_bytes\":65536},"
          + "\"display\":{\"enabled\":true,\"max_height\":768,\"max_width\":1024},"
          + "\"flow\":{\"open\":[{\"origins\":[\"net:a.example:443\"],"
          + "\"sink\":\"egress:b.example:443\"}],\"untrusted\":[\"net:a.example:443\"]},"
          + "\"host\":{\"clock\":true,\"inference\":true,\"logging\":true,\"random\":true},"
          + "\"kv\":{\"prefixes\":[[112,47]],\"read\":true,\"write\":true},"
          + "\"network\":{\"credentials\":[],\"inbound\":true,\"outbound\":[\"a.example:443\"]},"
          + "\"process\":{\"exec\":true,\"max_processes\":4,\"programs\":[\"ls\"]},"
          + "\"storage\":{\"delete\":[\"d/**\"],\"max_iops\":10,\"max_read_bps\":10,"
          + "\"read\":[\"r/**\"],\"write\":[\"w/**\"]}}";

  /**
   * Narrower than {@link #EVERY_PART} in every part: nothing granted, and one untrusted source
   * whose flows stay closed (no flow part at all tracks no taint, which is wider than any).
   */
  static final String NARROW = "{\"flow\":{\"open\":[],\"untrusted\":[\"net:a.example:443\"]}}";

  /**
   * Every part of a grant set is attenuated: a child that takes one part from {@link #EVERY_PART}
   * and the rest from {@link #NARROW} is refused under {@link #NARROW}, naming that part. A part
   * that {@link Attenuation#check} forgot would pass any widening of itself (fail open), silently.
   */
  @Test
  void everyPartOfAGrantSetIsAttenuated() throws Exception {
    Grants narrow = Grants.parse(NARROW.getBytes(StandardCharsets.UTF_8));
    Grants wide = Grants.parse(EVERY_PART.getBytes(StandardCharsets.UTF_8));
    java.lang.reflect.RecordComponent[] parts = Grants.class.getRecordComponents();
    Class<?>[] types = new Class<?>[parts.length];
    for (int i = 0; i < parts.length; i++) {
      types[i] = parts[i].getType();
    }
    java.lang.reflect.Constructor<Grants> make = Grants.class.getDeclaredConstructor(types);
    for (int i = 0; i < parts.length; i++) {
      String name = parts[i].getName();
      Object[] args = new Object[parts.length];
      for (int j = 0; j < parts.length; j++) {
        args[j] = parts[j].getAccessor().invoke(i == j ? wide : narrow);
      }
      assertTrue(
          !args[i].equals(parts[i].getAccessor().invoke(narrow)),
          "EVERY_PART and NARROW are the same in " + name + ": give it a wider value");
      Grants child = make.newInstance(args);
      Attenuation.Wider w =
          assertInstanceOf(
              Attenuation.Wider.class,
              Attenuation.check(child, narrow),
              "a child wider in " + name + " only passes: is " + name + " attenuated?");
      String json = name.replaceAll("([A-Z])", "_$1").toLowerCase(java.util.Locale.ROOT);
      assertTrue(w.path().startsWith("$." + json), name + ": refused at " + w.path());
    }
  }
}
