package io.sandboxd.enforcer;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sandboxd.attest.CanonicalJson;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The attenuation vectors (vectors/attenuation/vectors.json), written here by hand with their
 * expected verdicts: the file is generated from this table ({@link #fileBytes()}), and the test
 * checks both that the file is up to date and that {@link Attenuation} agrees with every case.
 */
final class AttenuationCases {
  private AttenuationCases() {}

  /** One pair: {@code widens} is the JSON path of the first widening part, or null for ⊑. */
  record Case(String name, String description, String child, String parent, String widens) {}

  private static final String EXEC_PARENT =
      "{\"process\":{\"exec\":true,\"programs\":[\"ls\",\"cat\"],\"max_processes\":4}}";
  private static final String FLOW_PARENT =
      "{\"flow\":{\"untrusted\":[\"net:a.example:443\"],"
          + "\"open\":[{\"sink\":\"egress:b.example:443\",\"origins\":[\"net:a.example:443\"]}]},"
          + "\"network\":{\"outbound\":[\"a.example:443\",\"b.example:443\"]}}";

  static List<Case> all() {
    List<Case> c = new ArrayList<>();
    c.add(ok("empty-in-empty", "The empty grant set attenuates itself.", "{}", "{}"));
    c.add(
        ok(
            "cpu-implicit",
            "Cpu is implicit (Q4): a child naming Cpu is within a parent that does not.",
            "{\"compute\":{\"devices\":[\"Cpu\"]}}",
            "{}"));
    c.add(
        wide(
            "device-added",
            "devices ⊆: Gpu is not in the parent's devices.",
            "{\"compute\":{\"devices\":[\"Simd\",\"Gpu\"]}}",
            "{\"compute\":{\"devices\":[\"Simd\"]}}",
            "$.compute.devices[1]"));
    c.add(
        ok(
            "budgets-lower",
            "Each budget ≤ the parent's.",
            "{\"compute\":{\"cpu_time_ms\":10,\"energy_budget_uj\":5,\"memory_bytes\":65536}}",
            "{\"compute\":{\"cpu_time_ms\":10,\"energy_budget_uj\":6,\"memory_bytes\":65537}}"));
    c.add(
        wide(
            "cpu-budget-higher",
            "cpu_time_ms above the parent's.",
            "{\"compute\":{\"cpu_time_ms\":11}}",
            "{\"compute\":{\"cpu_time_ms\":10}}",
            "$.compute.cpu_time_ms"));
    c.add(
        wide(
            "energy-budget-higher",
            "energy_budget_uj above the parent's.",
            "{\"compute\":{\"energy_budget_uj\":1}}",
            "{}",
            "$.compute.energy_budget_uj"));
    c.add(
        wide(
            "memory-higher",
            "memory_bytes above the parent's.",
            "{\"compute\":{\"memory_bytes\":2}}",
            "{\"compute\":{\"memory_bytes\":1}}",
            "$.compute.memory_bytes"));
    c.add(
        wide(
            "first-in-canonical-order",
            "Several parts widen: the first in canonical key order (compute before storage) is named.",
            "{\"storage\":{\"read\":[\"a\"]},\"compute\":{\"memory_bytes\":2}}",
            "{}",
            "$.compute.memory_bytes"));
    c.add(
        ok(
            "glob-same",
            "The same glob is covered.",
            "{\"storage\":{\"read\":[\"data/*.txt\"]}}",
            "{\"storage\":{\"read\":[\"data/*.txt\"]}}"));
    c.add(
        ok(
            "glob-under-deep",
            "p/** covers anything starting with p/.",
            "{\"storage\":{\"read\":[\"data/x/*/y\",\"data/**\",\"data\"]}}",
            "{\"storage\":{\"read\":[\"data/**\"]}}"));
    c.add(
        ok(
            "glob-under-trailing-star",
            "Q13 reading B: data/* covers data/x and data/x/y (any depth below, at least one).",
            "{\"storage\":{\"write\":[\"data/x\",\"data/x/y\",\"data/*/z\"]}}",
            "{\"storage\":{\"write\":[\"data/*\"]}}"));
    c.add(
        wide(
            "glob-trailing-star-not-prefix-itself",
            "Q13: data/* does not match data itself, so it does not cover data/** (which does).",
            "{\"storage\":{\"read\":[\"data/**\"]}}",
            "{\"storage\":{\"read\":[\"data/*\"]}}",
            "$.storage.read[0]"));
    c.add(
        wide(
            "glob-star-one-segment",
            "*/cfg matches one segment before cfg: it does not cover a/b/cfg.",
            "{\"storage\":{\"read\":[\"a/b/cfg\"]}}",
            "{\"storage\":{\"read\":[\"*/cfg\"]}}",
            "$.storage.read[0]"));
    c.add(
        ok(
            "glob-star-covers-literal",
            "*/cfg covers a/cfg; *.txt covers x.txt and a*.txt.",
            "{\"storage\":{\"read\":[\"a/cfg\",\"d/x.txt\",\"d/a*.txt\"]}}",
            "{\"storage\":{\"read\":[\"*/cfg\",\"d/*.txt\"]}}"));
    c.add(
        wide(
            "glob-wild-not-covering-wider-wild",
            "a*.txt does not cover *.txt.",
            "{\"storage\":{\"read\":[\"d/*.txt\"]}}",
            "{\"storage\":{\"read\":[\"d/a*.txt\"]}}",
            "$.storage.read[0]"));
    c.add(
        wide(
            "glob-absolute-vs-relative",
            "A leading / must agree: ** does not cover /etc/x.",
            "{\"storage\":{\"read\":[\"/etc/x\"]}}",
            "{\"storage\":{\"read\":[\"**\"]}}",
            "$.storage.read[0]"));
    c.add(
        wide(
            "glob-deep-child-under-star",
            "a/** is not within a/*/** (a/** matches a itself).",
            "{\"storage\":{\"read\":[\"a/**\"]}}",
            "{\"storage\":{\"read\":[\"a/*/**\"]}}",
            "$.storage.read[0]"));
    c.add(
        wide(
            "write-does-not-cover-delete",
            "Modes are separate: a write glob does not allow delete.",
            "{\"storage\":{\"delete\":[\"a\"]}}",
            "{\"storage\":{\"write\":[\"a\"]}}",
            "$.storage.delete[0]"));
    c.add(
        ok(
            "io-ceiling-lower",
            "A ceiling the parent sets is set by the child, no higher.",
            "{\"storage\":{\"max_iops\":10}}",
            "{\"storage\":{\"max_iops\":10}}"));
    c.add(
        wide(
            "io-ceiling-unset",
            "An unset ceiling is unbounded: wider than the parent's.",
            "{\"storage\":{\"read\":[\"a\"]}}",
            "{\"storage\":{\"read\":[\"a\"],\"max_read_bps\":100}}",
            "$.storage.max_read_bps"));
    c.add(
        ok(
            "io-ceiling-parent-unset",
            "The parent sets no ceiling: any child value is within.",
            "{\"storage\":{\"max_iops\":1000000}}",
            "{}"));
    c.add(
        wide(
            "outbound-added",
            "outbound ⊆.",
            "{\"network\":{\"outbound\":[\"a.example:443\",\"b.example:443\"]}}",
            "{\"network\":{\"outbound\":[\"A.example:0443\"]}}",
            "$.network.outbound[1]"));
    c.add(
        ok(
            "outbound-normalized",
            "Endpoints compare normalized (lowercase host, no leading zeros).",
            "{\"network\":{\"outbound\":[\"API.example:0443\"]}}",
            "{\"network\":{\"outbound\":[\"api.example:443\",\"b.example:80\"]}}"));
    c.add(
        wide(
            "inbound-on",
            "inbound ≤.",
            "{\"network\":{\"inbound\":true}}",
            "{}",
            "$.network.inbound"));
    c.add(
        wide(
            "credential-added",
            "credentials ⊆.",
            "{\"network\":{\"outbound\":[\"a.example:443\"],\"credentials\":[{\"endpoint\":"
                + "\"a.example:443\",\"secret_ref\":\"vault:k\",\"inject\":{\"Query\":{\"param\":"
                + "\"key\"}}}]}}",
            "{\"network\":{\"outbound\":[\"a.example:443\"]}}",
            "$.network.credentials[0]"));
    c.add(
        ok(
            "kv-prefix-extends",
            "Every child prefix extends some parent prefix.",
            "{\"kv\":{\"read\":true,\"prefixes\":[[117,115,101,114,47,97]]}}",
            "{\"kv\":{\"read\":true,\"write\":true,\"prefixes\":[[117,115,101,114,47]]}}"));
    c.add(
        wide(
            "kv-prefix-outside",
            "A prefix outside every parent prefix.",
            "{\"kv\":{\"read\":true,\"prefixes\":[[117,115]]}}",
            "{\"kv\":{\"read\":true,\"prefixes\":[[117,115,101,114,47]]}}",
            "$.kv.prefixes[0]"));
    c.add(
        wide(
            "kv-whole-keyspace",
            "Empty prefixes with a direction on is the whole keyspace: wider than named prefixes.",
            "{\"kv\":{\"read\":true}}",
            "{\"kv\":{\"read\":true,\"prefixes\":[[117]]}}",
            "$.kv.prefixes"));
    c.add(
        ok(
            "kv-parent-any-prefix",
            "An empty parent list allows any child prefix.",
            "{\"kv\":{\"write\":true,\"prefixes\":[[1,2,3]]}}",
            "{\"kv\":{\"write\":true}}"));
    c.add(wide("kv-write-on", "kv write ≤.", "{\"kv\":{\"write\":true}}", "{}", "$.kv.write"));
    c.add(
        wide(
            "host-clock-on",
            "host bools ≤.",
            "{\"host\":{\"clock\":true}}",
            "{\"host\":{\"logging\":true}}",
            "$.host.clock"));
    c.add(
        wide(
            "host-inference-on",
            "inference ≤.",
            "{\"host\":{\"inference\":true}}",
            "{\"host\":{\"clock\":true,\"random\":true,\"logging\":true}}",
            "$.host.inference"));
    c.add(
        ok(
            "exec-subset",
            "exec ≤, programs ⊆, max_processes ≤.",
            "{\"process\":{\"exec\":true,\"programs\":[\"ls\"],\"max_processes\":4}}",
            EXEC_PARENT));
    c.add(
        wide(
            "exec-without-parent-process",
            "A parent without a process part has no exec.",
            "{\"process\":{\"exec\":true,\"programs\":[\"ls\"],\"max_processes\":1}}",
            "{}",
            "$.process.exec"));
    c.add(
        ok(
            "exec-off-is-nothing",
            "A child process part with exec false grants nothing, whatever its list says.",
            "{\"process\":{\"exec\":false,\"programs\":[\"sh\"],\"max_processes\":9}}",
            "{}"));
    c.add(
        wide(
            "exec-program-added",
            "programs ⊆.",
            "{\"process\":{\"exec\":true,\"programs\":[\"ls\",\"sh\"],\"max_processes\":1}}",
            EXEC_PARENT,
            "$.process.programs[1]"));
    c.add(
        wide(
            "exec-more-processes",
            "max_processes ≤.",
            "{\"process\":{\"exec\":true,\"programs\":[],\"max_processes\":5}}",
            EXEC_PARENT,
            "$.process.max_processes"));
    c.add(
        wide(
            "browser-not-headless",
            "headless ≥: a headless parent allows only headless children.",
            "{\"browser\":{\"enabled\":true,\"origins\":[],\"headless\":false}}",
            "{\"browser\":{\"enabled\":true,\"origins\":[],\"headless\":true}}",
            "$.browser.headless"));
    c.add(
        ok(
            "browser-origins-subset",
            "origins ⊆, compared normalized (default port dropped).",
            "{\"browser\":{\"enabled\":true,\"origins\":[\"https://a.example:443\"],"
                + "\"headless\":true}}",
            "{\"browser\":{\"enabled\":true,\"origins\":[\"https://a.example\"]}}"));
    c.add(
        wide(
            "browser-origin-added",
            "origins ⊆.",
            "{\"browser\":{\"enabled\":true,\"origins\":[\"https://b.example\"]}}",
            "{\"browser\":{\"enabled\":true,\"origins\":[\"https://a.example\"]}}",
            "$.browser.origins[0]"));
    c.add(
        wide(
            "display-wider",
            "both dimensions ≤.",
            "{\"display\":{\"enabled\":true,\"max_width\":1025,\"max_height\":768}}",
            "{\"display\":{\"enabled\":true,\"max_width\":1024,\"max_height\":768}}",
            "$.display.max_width"));
    c.add(
        wide(
            "display-vnc",
            "vnc ≤.",
            "{\"display\":{\"enabled\":true,\"vnc\":true}}",
            "{\"display\":{\"enabled\":true}}",
            "$.display.vnc"));
    c.add(
        wide(
            "display-without-parent",
            "A parent without a display part has no display.",
            "{\"display\":{\"enabled\":true}}",
            "{}",
            "$.display.enabled"));
    c.add(
        ok(
            "flow-any-under-none",
            "A parent without a flow part never taints: any child flow part is narrower.",
            FLOW_PARENT,
            "{\"network\":{\"outbound\":[\"a.example:443\",\"b.example:443\"]}}"));
    c.add(ok("flow-same", "The same flow part.", FLOW_PARENT, FLOW_PARENT));
    c.add(
        wide(
            "flow-dropped",
            "A child without the parent's flow part is never tainted: wider.",
            "{\"network\":{\"outbound\":[\"a.example:443\",\"b.example:443\"]}}",
            FLOW_PARENT,
            "$.flow.untrusted"));
    c.add(
        wide(
            "flow-opened-more",
            "open ⊆: a sink opened that the parent keeps closed.",
            "{\"flow\":{\"untrusted\":[\"net:a.example:443\"],\"open\":[{\"sink\":"
                + "\"egress:a.example:443\",\"origins\":[\"net:a.example:443\"]}]}}",
            FLOW_PARENT,
            "$.flow.open[0]"));
    c.add(
        ok(
            "flow-more-untrusted-fewer-open",
            "untrusted ⊇ and open ⊆.",
            "{\"flow\":{\"untrusted\":[\"net:a.example:443\",\"storage:in/**\"],\"open\":[]}}",
            FLOW_PARENT));
    return c;
  }

  private static Case ok(String name, String description, String child, String parent) {
    return new Case(name, description, child, parent, null);
  }

  private static Case wide(
      String name, String description, String child, String parent, String path) {
    return new Case(name, description, child, parent, path);
  }

  /** The vector file: one canonical JSON object per case, one case per line. */
  static byte[] fileBytes() {
    StringBuilder sb = new StringBuilder("[\n");
    List<Case> all = all();
    for (int i = 0; i < all.size(); i++) {
      Case k = all.get(i);
      ObjectNode o = CanonicalJson.mapper().createObjectNode();
      o.put("name", k.name());
      o.put("description", k.description());
      o.set("child", CanonicalJson.parse(k.child().getBytes(StandardCharsets.UTF_8)));
      o.set("parent", CanonicalJson.parse(k.parent().getBytes(StandardCharsets.UTF_8)));
      ObjectNode expected = o.putObject("expected");
      if (k.widens() == null) {
        expected.put("attenuates", true);
      } else {
        expected.put("attenuates", false);
        expected.put("widens", k.widens());
      }
      sb.append(CanonicalJson.canonicalString(o)).append(i + 1 < all.size() ? ",\n" : "\n");
    }
    return sb.append("]\n").toString().getBytes(StandardCharsets.UTF_8);
  }
}
