package io.sandboxd.enforcer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The line protocol of {@code sandboxctl enforce}. */
class QueryRunnerTest {
  private static final String GRANTS =
      "{\"storage\":{\"read\":[\"inbox/**\",\"data/**\"]},"
          + "\"network\":{\"outbound\":[\"api.example.com:443\"]},"
          + "\"flow\":{\"untrusted\":[\"storage:inbox/**\"],"
          + "\"open\":[{\"sink\":\"egress:api.example.com:443\",\"origins\":[]}]}}";

  private static QueryRunner runner() {
    return new QueryRunner(new Enforcer(Grants.parse(GRANTS.getBytes(StandardCharsets.UTF_8))));
  }

  @Test
  void answersEachLineInOrderWithTaintCarried() throws IOException {
    String in =
        String.join(
            "\n",
            "{\"query\":\"may_egress\",\"endpoint\":\"api.example.com:443\"}",
            "",
            "{\"query\":\"may_path\",\"mode\":\"read\",\"path\":\"inbox/m1\"}",
            "not json",
            "{\"query\":\"may_egress\",\"endpoint\":\"api.example.com:443\"}",
            "{\"query\":\"may_egress\",\"endpoint\":\"other.example.com:443\"}");
    StringWriter out = new StringWriter();
    runner().run(new BufferedReader(new StringReader(in)), new PrintWriter(out));
    List<String> lines = out.toString().lines().toList();
    assertEquals(5, lines.size(), out.toString());
    assertEquals("{\"decision\":\"Allow\",\"taint\":[]}", lines.get(0));
    assertEquals("{\"decision\":\"Allow\",\"taint\":[\"storage:inbox/**\"]}", lines.get(1));
    assertTrue(lines.get(2).startsWith("{\"error\":\"malformed JSON"), lines.get(2));
    assertEquals(
        "{\"decision\":\"Tainted\",\"reason\":\"run carries storage:inbox/** not opened to this sink\","
            + "\"taint\":[\"storage:inbox/**\"]}",
        lines.get(3));
    assertEquals(
        "{\"decision\":\"Denied\",\"reason\":\"endpoint other.example.com:443 is not in network.outbound\","
            + "\"taint\":[\"storage:inbox/**\"]}",
        lines.get(4));
  }

  @Test
  void execQueriesNeedAResolverToHashBinaries() {
    String line =
        runner().answer("{\"query\":\"may_exec\",\"program\":\"ls\",\"path\":\"/bin/ls\"}");
    assertTrue(line.contains("no program resolver"), line);
  }

  @Test
  void nonObjectQueriesAreErrors() {
    assertTrue(runner().answer("[1]").startsWith("{\"error\":"));
    assertTrue(runner().answer("{\"query\":7}").contains("$.query"));
  }

  @Test
  void everyQueryKindIsAnsweredAndStrayFieldsAndKindsAreRefusedByName() {
    List<String> each =
        List.of(
            "{\"query\":\"may_dispatch\",\"class\":\"Cpu\"}",
            "{\"query\":\"may_path\",\"mode\":\"read\",\"path\":\"data/x\"}",
            "{\"query\":\"may_egress\",\"endpoint\":\"api.example.com:443\"}",
            "{\"query\":\"may_kv\",\"dir\":\"read\",\"key\":\"k\"}",
            "{\"query\":\"may_host\",\"service\":\"clock\"}",
            "{\"query\":\"may_exec\",\"program\":\"ls\"}",
            "{\"query\":\"may_navigate\",\"origin\":\"https://a.example\"}",
            "{\"query\":\"may_display\"}",
            "{\"query\":\"may_display\",\"width\":10,\"height\":10}",
            "{\"query\":\"may_vnc\"}",
            "{\"query\":\"may_sustain_io\",\"iops\":1,\"read_bps\":1}",
            "{\"query\":\"may_inbound\"}");
    for (String q : each) {
      String a = runner().answer(q);
      assertTrue(a.startsWith("{\"decision\":"), q + " -> " + a);
    }
    assertEquals(
        "{\"error\":\"$.query: unknown query \\\"may_fly\\\"\"}",
        runner().answer("{\"query\":\"may_fly\"}"));
    String stray = runner().answer("{\"query\":\"may_vnc\",\"class\":\"Cpu\"}");
    assertTrue(stray.startsWith("{\"error\":") && stray.contains("class"), stray);
  }
}
