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
    Options o =
        leadingOptions(
            args,
            (a, at) -> {
              int width = width(a, withArg);
              if (width > 0) {
                return width;
              }
              boolean known =
                  flags.contains(a)
                      || (longPrefix != null && a.startsWith("--") && a.contains("="))
                      || (numericFlags
                          && a.length() > 1
                          && a.substring(1).chars().allMatch(Character::isDigit));
              return known ? 1 : 0;
            });
    return o.unknown() != null
        ? new Opaque("unknown option " + o.unknown())
        : runFrom(args, o.operands());
  }

  /** The words one leading option {@code a} (at index {@code at}) uses up; 0 when unknown. */
  private interface OptionWords {
    int of(String a, int at);
  }

  /** Where the leading options end: the first operand's index, or the first unknown option. */
  private record Options(int operands, String unknown) {}

  /**
   * Reads the leading options of {@code args}: "--" ends them and is used up, the first word that
   * is not an option (a lone "-" is not) ends them and is kept; an unknown option stops the read.
   */
  private static Options leadingOptions(List<String> args, OptionWords words) {
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
      int n = words.of(a, i);
      if (n == 0) {
        return new Options(i, a);
      }
      i += n;
    }
    return new Options(i, null);
  }

  /**
   * 2 for an option in {@code withArg} (its value is the next word), 1 for one with its value
   * attached ("-n5"), 0 for any other.
   */
  private static int width(String a, Set<String> withArg) {
    if (withArg.contains(a)) {
      return 2;
    }
    return a.length() > 2 && withArg.contains(a.substring(0, 2)) ? 1 : 0;
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
    Options o =
        leadingOptions(
            args,
            (a, at) -> {
              int width = width(a, Set.of("-s", "-k"));
              if (width > 0) {
                return width;
              }
              boolean known =
                  a.startsWith("--signal=")
                      || a.startsWith("--kill-after=")
                      || a.equals("--preserve-status")
                      || a.equals("--foreground")
                      || a.equals("-v")
                      || a.equals("--verbose");
              return known ? 1 : 0;
            });
    if (o.unknown() != null) {
      return new Opaque("unknown timeout option " + o.unknown());
    }
    return runFrom(args, o.operands() + 1); // after the duration
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
    // xargs substitutes its input for the last replace string given (-I, -i or --replace)
    String[] replace = {null};
    Options o =
        leadingOptions(
            args,
            (a, at) -> {
              if (a.equals("-I")) {
                replace[0] = at + 1 < args.size() ? args.get(at + 1) : null;
                return 2;
              }
              if (a.startsWith("-I") || a.startsWith("--replace")) {
                replace[0] =
                    a.startsWith("-I")
                        ? a.substring(2)
                        : a.contains("=") ? a.substring(a.indexOf('=') + 1) : "{}";
                return 1;
              }
              if (a.equals("-i")) {
                replace[0] = "{}";
                return 1;
              }
              int width = width(a, withArg);
              if (width > 0) {
                return width;
              }
              return flags.contains(a) || (a.startsWith("--") && a.contains("=")) ? 1 : 0;
            });
    if (o.unknown() != null) {
      return new Opaque("unknown xargs option " + o.unknown());
    }
    int i = o.operands();
    if (i >= args.size()) {
      return new Run(List.of("echo")); // xargs runs echo by default
    }
    if (replace[0] != null && !replace[0].isEmpty() && args.get(i).contains(replace[0])) {
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
