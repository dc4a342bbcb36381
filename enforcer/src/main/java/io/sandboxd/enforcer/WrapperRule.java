package io.sandboxd.enforcer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * What a known wrapper program runs next, read from its argument vector: {@code env}, {@code nice},
 * {@code timeout}, {@code xargs}, {@code nohup}, {@code setsid}, {@code stdbuf}, shells ({@code sh
 * -c}, a script file), the dynamic loader, and {@code busybox} applets. Anything else runs nothing
 * the resolver can see.
 */
final class WrapperRule {
  static final Set<String> SHELLS = Set.of("sh", "bash", "dash", "zsh", "ksh", "ash", "mksh");

  private WrapperRule() {}

  /** The next step of a chain. */
  sealed interface Next {}

  /** The wrapper runs no further program. */
  record Nothing() implements Next {}

  /** The wrapper executes this argument vector. */
  record Run(List<String> argv) implements Next {}

  /** A shell reads this script file (its {@code #!} line is a comment to the shell). */
  record Script(String path) implements Next {}

  /** The resolver cannot tell what runs. */
  record Opaque(String reason) implements Next {}

  /** True for a program name this class knows how to see through. */
  static boolean isWrapper(String name) {
    return switch (name) {
      case "env", "nice", "timeout", "xargs", "nohup", "setsid", "stdbuf", "busybox" -> true;
      default -> SHELLS.contains(name) || isLoader(name);
    };
  }

  static boolean isLoader(String name) {
    return name.startsWith("ld-linux") || name.startsWith("ld.so") || name.startsWith("ld64.so");
  }

  /** What {@code argv} (whose program is the wrapper {@code name}) runs next. */
  static Next next(String name, List<String> argv) {
    List<String> args = argv.subList(1, argv.size());
    if (SHELLS.contains(name)) {
      return shell(name, args);
    }
    if (isLoader(name)) {
      return loader(args);
    }
    return switch (name) {
      case "env" -> env(args);
      case "nice" -> afterOptions(args, Set.of("-n"), Set.of(), "--adjustment=", true);
      case "timeout" -> timeout(args);
      case "xargs" -> xargs(args);
      case "nohup" -> afterOptions(args, Set.of(), Set.of(), null, false);
      case "setsid" -> afterOptions(args, Set.of(), Set.of("-c", "-f", "-w"), null, false);
      case "stdbuf" -> afterOptions(args, Set.of("-i", "-o", "-e"), Set.of(), "--", false);
      case "busybox" -> busybox(args);
      default -> new Nothing();
    };
  }

  private static Next run(List<String> rest) {
    return rest.isEmpty() ? new Nothing() : new Run(List.copyOf(rest));
  }

  /** Runs {@code args} from index {@code i} on; nothing when the options used up every word. */
  private static Next runFrom(List<String> args, int i) {
    return i >= args.size() ? new Nothing() : run(args.subList(i, args.size()));
  }

  /**
   * Skips options (those in {@code withArg} take the next word or an attached value; {@code flags}
   * take none; {@code longPrefix} forms carry their value after '='), then runs the rest.
   */
  private static Next afterOptions(
      List<String> args,
      Set<String> withArg,
      Set<String> flags,
      String longPrefix,
      boolean numericFlags) {
    int i = 0;
    while (i < args.size()) {
      String a = args.get(i);
      if (a.equals("--")) {
        i++;
        break;
      }
      if (!a.startsWith("-") || a.equals("-")) {
        break;
      }
      if (withArg.contains(a)) {
        i += 2;
      } else if (a.length() > 2 && withArg.contains(a.substring(0, 2))) {
        i++;
      } else if (flags.contains(a)) {
        i++;
      } else if (longPrefix != null && a.startsWith("--") && a.contains("=")) {
        i++;
      } else if (numericFlags
          && a.length() > 1
          && a.substring(1).chars().allMatch(Character::isDigit)) {
        i++;
      } else {
        return new Opaque("unknown option " + a);
      }
    }
    return runFrom(args, i);
  }

  private static Next env(List<String> args) {
    List<String> rest = new ArrayList<>(args);
    int i = 0;
    while (i < rest.size()) {
      String a = rest.get(i);
      if (a.equals("--")) {
        i++;
        break;
      }
      if (a.equals("-")
          || a.equals("-i")
          || a.equals("-0")
          || a.equals("-v")
          || a.equals("--ignore-environment")
          || a.equals("--null")
          || a.equals("--debug")) {
        i++;
      } else if (a.equals("-u") || a.equals("-C")) {
        i += 2;
      } else if (a.startsWith("-u")
          || a.startsWith("-C")
          || a.startsWith("--unset=")
          || a.startsWith("--chdir=")) {
        i++;
      } else if (a.equals("-S") || a.startsWith("-S") || a.startsWith("--split-string=")) {
        // -S splits one argument into several: the split words replace it
        String s =
            a.equals("-S")
                ? (i + 1 < rest.size() ? rest.get(i + 1) : "")
                : a.startsWith("--") ? a.substring(a.indexOf('=') + 1) : a.substring(2);
        int consumed = a.equals("-S") ? 2 : 1;
        List<String> split = Arrays.asList(s.trim().split("[ \t]+"));
        if (s.indexOf('$') >= 0
            || s.indexOf('\\') >= 0
            || s.indexOf('"') >= 0
            || s.indexOf('\'') >= 0) {
          return new Opaque("env -S string with quoting or expansion");
        }
        List<String> tail =
            new ArrayList<>(rest.subList(Math.min(i + consumed, rest.size()), rest.size()));
        rest = new ArrayList<>(rest.subList(0, i));
        if (!s.isBlank()) {
          rest.addAll(split);
        }
        rest.addAll(tail);
      } else if (a.startsWith("-")) {
        return new Opaque("unknown env option " + a);
      } else if (CommandLine.isAssignment(a)) {
        i++;
      } else {
        break;
      }
    }
    return runFrom(rest, i);
  }

  private static Next timeout(List<String> args) {
    int i = 0;
    while (i < args.size() && args.get(i).startsWith("-") && !args.get(i).equals("-")) {
      String a = args.get(i);
      if (a.equals("--")) {
        i++;
        break;
      }
      if (a.equals("-s") || a.equals("-k")) {
        i += 2;
      } else if (a.startsWith("-s")
          || a.startsWith("-k")
          || a.startsWith("--signal=")
          || a.startsWith("--kill-after=")
          || a.equals("--preserve-status")
          || a.equals("--foreground")
          || a.equals("-v")
          || a.equals("--verbose")) {
        i++;
      } else {
        return new Opaque("unknown timeout option " + a);
      }
    }
    i++; // the duration
    return runFrom(args, i);
  }

  private static Next xargs(List<String> args) {
    Set<String> withArg = Set.of("-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "-e", "-i", "-l");
    Set<String> flags =
        Set.of(
            "-0",
            "-r",
            "-t",
            "-p",
            "-x",
            "--null",
            "--no-run-if-empty",
            "--verbose",
            "--interactive",
            "--exit",
            "--open-tty",
            "-o");
    String replace = null;
    int i = 0;
    while (i < args.size()) {
      String a = args.get(i);
      if (a.equals("--")) {
        i++;
        break;
      }
      if (!a.startsWith("-") || a.equals("-")) {
        break;
      }
      if (a.equals("-I")) {
        replace = i + 1 < args.size() ? args.get(i + 1) : null;
        i += 2;
      } else if (a.startsWith("-I") || a.startsWith("--replace")) {
        replace =
            a.startsWith("-I")
                ? a.substring(2)
                : a.contains("=") ? a.substring(a.indexOf('=') + 1) : "{}";
        i++;
      } else if (a.equals("-i")) {
        replace = "{}";
        i++;
      } else if (withArg.contains(a)) {
        i += 2;
      } else if (a.length() > 2 && withArg.contains(a.substring(0, 2))) {
        i++;
      } else if (flags.contains(a) || (a.startsWith("--") && a.contains("="))) {
        i++;
      } else {
        return new Opaque("unknown xargs option " + a);
      }
    }
    if (i >= args.size()) {
      return new Run(List.of("echo")); // xargs runs echo by default
    }
    if (replace != null && !replace.isEmpty() && args.get(i).contains(replace)) {
      return new Opaque("xargs builds the program name from its input");
    }
    return run(args.subList(i, args.size()));
  }

  private static Next busybox(List<String> args) {
    if (args.isEmpty() || args.get(0).startsWith("-")) {
      return new Nothing(); // --list, --help: busybox itself prints and exits
    }
    return new Run(List.copyOf(args));
  }

  private static Next loader(List<String> args) {
    Set<String> withArg =
        Set.of(
            "--library-path",
            "--inhibit-rpath",
            "--audit",
            "--preload",
            "--argv0",
            "--glibc-hwcaps-prefix",
            "--glibc-hwcaps-mask");
    int i = 0;
    while (i < args.size() && args.get(i).startsWith("--")) {
      String a = args.get(i);
      if (a.equals("--list")
          || a.equals("--verify")
          || a.equals("--help")
          || a.equals("--version")
          || a.equals("--list-tunables")
          || a.equals("--list-diagnostics")) {
        return new Nothing();
      }
      if (a.equals("--")) {
        i++;
        break;
      }
      if (withArg.contains(a)) {
        i += 2;
      } else if (a.equals("--inhibit-cache")) {
        i++;
      } else {
        return new Opaque("unknown loader option " + a);
      }
    }
    if (i >= args.size()) {
      return new Nothing();
    }
    List<String> rest = new ArrayList<>(args.subList(i, args.size()));
    // the loader opens its operand as a path, never through PATH
    if (!rest.get(0).contains("/")) {
      rest.set(0, "./" + rest.get(0));
    }
    return new Run(rest);
  }

  private static Next shell(String name, List<String> args) {
    boolean command = false;
    int i = 0;
    while (i < args.size()) {
      String a = args.get(i);
      if (a.equals("--") || a.equals("-")) {
        i++;
        break;
      }
      if (a.startsWith("--")) {
        i += a.equals("--rcfile") || a.equals("--init-file") ? 2 : 1;
        continue;
      }
      if ((a.startsWith("-") || a.startsWith("+")) && a.length() > 1) {
        String letters = a.substring(1);
        if (letters.indexOf('s') >= 0) {
          return new Opaque(name + " -s reads commands from standard input");
        }
        if (letters.indexOf('c') >= 0) {
          command = true;
        }
        i += letters.indexOf('o') >= 0 || letters.indexOf('O') >= 0 ? 2 : 1;
        continue;
      }
      break;
    }
    if (command) {
      if (i >= args.size()) {
        return new Opaque(name + " -c without a script");
      }
      return script(args.get(i));
    }
    if (i >= args.size()) {
      return new Opaque(name + " reads commands from standard input");
    }
    return new Script(args.get(i));
  }

  /** What a {@code sh -c} script runs, when it is one simple command. */
  static Next script(String text) {
    CommandLine.Parsed parsed = CommandLine.parse(text);
    if (parsed.opaque() != null) {
      return new Opaque(parsed.opaque());
    }
    List<String> words = parsed.words();
    while (!words.isEmpty() && (words.get(0).equals("exec") || words.get(0).equals("command"))) {
      words = words.subList(1, words.size());
      while (!words.isEmpty() && words.get(0).startsWith("-")) {
        if (words.get(0).equals("-v") || words.get(0).equals("-V")) {
          return new Nothing(); // "command -v x" looks x up and runs nothing
        }
        words = words.subList(1, words.size());
      }
    }
    if (words.isEmpty() || CommandLine.BUILTINS_RUNNING_NOTHING.contains(words.get(0))) {
      return new Nothing();
    }
    if (CommandLine.OPAQUE_WORDS.contains(words.get(0))) {
      return new Opaque("shell word " + words.get(0) + " runs code the resolver cannot see");
    }
    return new Run(words);
  }
}
