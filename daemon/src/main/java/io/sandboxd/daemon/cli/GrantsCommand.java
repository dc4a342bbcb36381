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
final class GrantsCommand implements Runnable {
  @Override
  public void run() {
    picocli.CommandLine.usage(this, System.err);
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
      try {
        System.out.println(Grants.parse(Input.read(file)).grantsId());
        return 0;
      } catch (GrantsException | IOException e) {
        System.err.println("sandboxctl grants id: " + Input.name(file) + ": " + e.getMessage());
        return Sandboxctl.UNUSABLE;
      }
    }
  }

  /** `sandboxctl grants canon FILE`. */
  @Command(name = "canon", description = "Print the canonical bytes of a grant set (no newline).")
  static final class Canon implements Callable<Integer> {
    @Parameters(arity = "0..1", paramLabel = "FILE|-", description = "Grant JSON (default: stdin).")
    String file;

    @Override
    public Integer call() {
      try {
        byte[] canonical = Grants.parse(Input.read(file)).canonicalBytes();
        PrintStream out = System.out;
        out.write(canonical);
        out.flush();
        return 0;
      } catch (GrantsException | IOException e) {
        System.err.println("sandboxctl grants canon: " + Input.name(file) + ": " + e.getMessage());
        return Sandboxctl.UNUSABLE;
      }
    }
  }
}
