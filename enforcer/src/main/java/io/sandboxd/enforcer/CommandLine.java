package io.sandboxd.enforcer;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The words of a {@code sh -c} script when it is one simple command, or an explanation of why the
 * resolver cannot tell what it runs (any operator, expansion or compound syntax).
 */
final class CommandLine {
  private static final String SPECIAL = ";&|<>()$`\\{}*?[]~!#\n\r";

  /** Shell words that run no external program when they lead a simple command. */
  static final Set<String> BUILTINS_RUNNING_NOTHING =
      Set.of(":", "true", "false", "echo", "printf", "cd", "pwd", "export", "unset", "test", "[");

  /** Shell words whose operands run code the resolver cannot see. */
  static final Set<String> OPAQUE_WORDS =
      Set.of(
          "eval",
          ".",
          "source",
          "if",
          "then",
          "else",
          "elif",
          "fi",
          "for",
          "while",
          "until",
          "do",
          "done",
          "case",
          "esac",
          "function",
          "select",
          "trap",
          "alias",
          "coproc",
          "time");

  private CommandLine() {}

  /** Either the words of a simple command, or why it is not one. */
  record Parsed(List<String> words, String opaque) {}

  static Parsed parse(String script) {
    List<String> words = new ArrayList<>();
    StringBuilder cur = new StringBuilder();
    boolean inWord = false;
    int i = 0;
    while (i < script.length()) {
      char c = script.charAt(i);
      if (c == '\'') {
        int end = script.indexOf('\'', i + 1);
        if (end < 0) {
          return new Parsed(List.of(), "unterminated quote in shell script");
        }
        cur.append(script, i + 1, end);
        inWord = true;
        i = end + 1;
      } else if (c == '"') {
        int end = script.indexOf('"', i + 1);
        if (end < 0) {
          return new Parsed(List.of(), "unterminated quote in shell script");
        }
        String inner = script.substring(i + 1, end);
        if (inner.indexOf('$') >= 0 || inner.indexOf('`') >= 0 || inner.indexOf('\\') >= 0) {
          return new Parsed(List.of(), "expansion inside double quotes in shell script");
        }
        cur.append(inner);
        inWord = true;
        i = end + 1;
      } else if (c == ' ' || c == '\t') {
        if (inWord) {
          words.add(cur.toString());
          cur.setLength(0);
          inWord = false;
        }
        i++;
      } else if (SPECIAL.indexOf(c) >= 0) {
        return new Parsed(
            List.of(), "shell syntax '" + (c == '\n' ? "\\n" : String.valueOf(c)) + "' in script");
      } else {
        cur.append(c);
        inWord = true;
        i++;
      }
    }
    if (inWord) {
      words.add(cur.toString());
    }
    // leading NAME=value words set the environment of the command that follows
    int first = 0;
    while (first < words.size() && isAssignment(words.get(first))) {
      first++;
    }
    return new Parsed(List.copyOf(words.subList(first, words.size())), null);
  }

  static boolean isAssignment(String word) {
    int eq = word.indexOf('=');
    if (eq <= 0) {
      return false;
    }
    for (int i = 0; i < eq; i++) {
      char c = word.charAt(i);
      boolean ok =
          c == '_'
              || (c >= 'a' && c <= 'z')
              || (c >= 'A' && c <= 'Z')
              || (i > 0 && c >= '0' && c <= '9');
      if (!ok) {
        return false;
      }
    }
    return true;
  }
}
