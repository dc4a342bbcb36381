package io.sandboxd.daemon.cli;

import io.sandboxd.enforcer.Enforcer;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.enforcer.GrantsException;
import io.sandboxd.enforcer.ProgramResolver;
import io.sandboxd.enforcer.QueryRunner;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * `sandboxctl enforce`: answers JSON query lines as one run under a grant set, one JSON decision
 * line per query, with taint carried from line to line.
 */
@Command(
    name = "enforce",
    description = "Decide JSON query lines (one run, in order) under a grant set.")
final class EnforceCommand implements Callable<Integer> {
  @Option(names = "--grants", required = true, paramLabel = "FILE", description = "Grant JSON.")
  String grants;

  @Option(names = "--queries", paramLabel = "FILE|-", description = "Query lines (default: stdin).")
  String queries;

  @Option(
      names = "--denylist",
      paramLabel = "FILE",
      description = "Node exec denylist: one b3:<64 hex> per line.")
  String denylist;

  @Option(
      names = "--root",
      paramLabel = "DIR",
      defaultValue = "/",
      description = "File tree under which may_exec binaries are found and hashed (default: /).")
  String root;

  @Option(
      names = "--search-path",
      paramLabel = "DIRS",
      defaultValue = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      description = "Colon-separated directories searched for may_exec argv[0].")
  String searchPath;

  @Override
  public Integer call() {
    Enforcer enforcer;
    try {
      Set<String> deny = new HashSet<>();
      if (denylist != null) {
        for (String line : Files.readAllLines(Path.of(denylist), StandardCharsets.UTF_8)) {
          if (!line.isBlank() && !line.startsWith("#")) {
            deny.add(line.trim());
          }
        }
      }
      enforcer = new Enforcer(Grants.parse(Input.read(grants)), deny);
    } catch (GrantsException | IllegalArgumentException | IOException e) {
      return Sandboxctl.unusable("enforce", e.getMessage());
    }
    List<String> dirs = Arrays.stream(searchPath.split(":")).filter(d -> !d.isEmpty()).toList();
    QueryRunner run =
        new QueryRunner(enforcer, Optional.of(new ProgramResolver(Path.of(root), dirs)));
    PrintWriter out =
        new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), false);
    try (BufferedReader in = reader()) {
      run.run(in, out);
      return 0;
    } catch (IOException e) {
      return Sandboxctl.unusable("enforce", Input.name(queries) + ": " + e.getMessage());
    } finally {
      out.flush();
    }
  }

  private BufferedReader reader() throws IOException {
    if (queries == null || queries.equals("-")) {
      return new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    }
    return Files.newBufferedReader(Path.of(queries), StandardCharsets.UTF_8);
  }
}
