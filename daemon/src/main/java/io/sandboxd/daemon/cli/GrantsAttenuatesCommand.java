package io.sandboxd.daemon.cli;

import io.sandboxd.enforcer.Attenuation;
import io.sandboxd.enforcer.Grants;
import io.sandboxd.enforcer.GrantsException;
import java.io.IOException;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** `sandboxctl grants attenuates CHILD PARENT`: whether CHILD ⊑ PARENT (WIRE.md §2.11). */
@Command(
    name = "attenuates",
    description =
        "Exit 0 when CHILD is within PARENT (the attenuation order of WIRE.md §2.11); 1 with the"
            + " first widening part of CHILD on stderr; 2 on unusable input.")
final class GrantsAttenuatesCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "CHILD", description = "Grant JSON file, or - for stdin.")
  String child;

  @Parameters(index = "1", paramLabel = "PARENT", description = "Grant JSON file, or - for stdin.")
  String parent;

  @Override
  public Integer call() {
    if ("-".equals(child) && "-".equals(parent)) {
      return Sandboxctl.unusable("grants attenuates", "only one of CHILD and PARENT can be -");
    }
    Grants c;
    Grants p;
    try {
      c = read(child);
      p = read(parent);
    } catch (IllegalArgumentException e) {
      return Sandboxctl.unusable("grants attenuates", e.getMessage());
    }
    if (Attenuation.check(c, p) instanceof Attenuation.Wider w) {
      System.err.println("sandboxctl grants attenuates: CHILD is wider than PARENT at " + w);
      return 1;
    }
    return 0;
  }

  private static Grants read(String file) {
    try {
      return Grants.parse(Input.read(file));
    } catch (GrantsException | IOException e) {
      throw new IllegalArgumentException(Input.name(file) + ": " + e.getMessage(), e);
    }
  }
}
