package io.sandboxd.daemon.cli;

import io.sandboxd.enforcer.Grants;
import io.sandboxd.enforcer.GrantsException;
import java.io.IOException;
import java.io.PrintStream;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** `sandboxctl grants id|canon FILE`: a grant set's content id or its canonical bytes. */
@Command(
    name = "grants",
    description = "Print a grant set's grants_id or canonical bytes; compare two by attenuation.",
    subcommands = {
      GrantsCommand.Id.class,
      GrantsCommand.Canon.class,
      GrantsAttenuatesCommand.class
    })
final class GrantsCommand extends CommandGroup {
  /** What a subcommand does with the grant set it read. */
  @FunctionalInterface
  interface Work {
    void apply(Grants grants) throws IOException;
  }

  /** Parses FILE (or stdin) for {@code work}; unusable input names the file and exits 2. */
  static int withGrants(String command, String file, Work work) {
    try {
      work.apply(Grants.parse(Input.read(file)));
      return 0;
    } catch (GrantsException | IOException e) {
      return Sandboxctl.unusable(command, Input.name(file) + ": " + e.getMessage());
    }
  }

  /** `sandboxctl grants id FILE`. */
  @Command(
      name = "id",
      description = "Print the grants_id (64 lowercase hex, BLAKE3 of the JCS bytes).")
  static final class Id implements Callable<Integer> {
    @Parameters(arity = "0..1", paramLabel = "FILE|-", description = "Grant JSON (default: stdin).")
    String file;

    @Override
    public Integer call() {
      return withGrants("grants id", file, g -> System.out.println(g.grantsId()));
    }
  }

  /** `sandboxctl grants canon FILE`. */
  @Command(name = "canon", description = "Print the canonical bytes of a grant set (no newline).")
  static final class Canon implements Callable<Integer> {
    @Parameters(arity = "0..1", paramLabel = "FILE|-", description = "Grant JSON (default: stdin).")
    String file;

    @Override
    public Integer call() {
      return withGrants(
          "grants canon",
          file,
          g -> {
            PrintStream out = System.out;
            out.write(g.canonicalBytes());
            out.flush();
          });
    }
  }
}
