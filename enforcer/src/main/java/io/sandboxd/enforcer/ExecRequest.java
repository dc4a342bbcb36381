package io.sandboxd.enforcer;

import java.util.List;
import java.util.Optional;

/**
 * What an exec would really run, as resolved before asking the Enforcer: the chain of programs
 * (wrappers first, the final target last), or why part of it cannot be known.
 *
 * @param steps every program that would execute, in order; never empty
 * @param unresolved set when the resolver could not see everything that would run (for example a
 *     shell script with compound syntax); such a request is denied
 */
public record ExecRequest(List<ExecStep> steps, Optional<String> unresolved) {

  public ExecRequest {
    steps = List.copyOf(steps);
    if (steps.isEmpty()) {
      throw new IllegalArgumentException("an exec request names at least one program");
    }
  }

  /** A request for one program by name, with no binary hashed. */
  public static ExecRequest named(String program) {
    return new ExecRequest(List.of(ExecStep.named(program)), Optional.empty());
  }

  /** A fully resolved chain. */
  public static ExecRequest of(List<ExecStep> steps) {
    return new ExecRequest(steps, Optional.empty());
  }

  /** The program the chain finally runs. */
  public ExecStep target() {
    return steps.get(steps.size() - 1);
  }
}
