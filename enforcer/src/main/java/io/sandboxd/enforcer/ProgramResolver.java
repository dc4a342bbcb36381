package io.sandboxd.enforcer;

import io.sandboxd.attest.Blake3;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Resolves an exec argument vector to what would really execute, before the Enforcer is asked:
 * finds each program's file (through the search path and symlinks), hashes it with BLAKE3, and sees
 * through wrappers ({@code env}, {@code sh -c}, {@code nice}, {@code timeout}, {@code xargs},
 * {@code busybox}, the dynamic loader, {@code #!} interpreters). This is the only class in the
 * module that does I/O; see the module README for what it cannot see.
 */
public final class ProgramResolver {
  private static final int MAX_DEPTH = 16;
  private static final int MAX_SYMLINKS = 40;

  /** The largest binary or script the resolver reads (and so may keep in memory) per step. */
  public static final long MAX_BINARY_BYTES = 256L << 20;

  private final Path root;
  private final List<String> searchPath;
  private final Optional<Path> workDir;

  /**
   * The bytes of one file the resolver hashed, as it read them: {@code word} is the command word
   * (or script operand) that named it, {@code depth} 0 for the program the caller named.
   */
  public record Binary(String word, int depth, boolean script, String b3Hex, byte[] bytes) {}

  /** What {@code argv} would run, and the exact bytes of every file hashed to decide it. */
  public record Resolution(ExecRequest request, List<Binary> binaries) {
    public Resolution {
      binaries = List.copyOf(binaries);
    }

    /** The program the caller named, when its file was read. */
    public Optional<Binary> top() {
      return binaries.stream().filter(b -> b.depth() == 0 && !b.script()).findFirst();
    }
  }

  /**
   * A resolver over the file tree under {@code root} ({@code /} on a real node; a fixture directory
   * in tests), searching {@code searchPath} (absolute directories, e.g. {@code /usr/bin}) for
   * programs named without a {@code /}.
   */
  public ProgramResolver(Path root, List<String> searchPath) {
    this(root, searchPath, Optional.empty());
  }

  /**
   * As above, where a command word or script operand that is a relative path (it has a '/' but does
   * not start with one) is found under {@code workDir}, the directory the program runs in (the
   * unit's storage). A file found there, or any path that leads into it, is a step named by its
   * path, which no name entry matches: only a {@code b3:} entry can allow it. Without a work
   * directory a relative path is not found.
   */
  public ProgramResolver(Path root, List<String> searchPath, Optional<Path> workDir) {
    this.root = root.toAbsolutePath().normalize();
    this.searchPath = List.copyOf(searchPath);
    this.workDir = workDir.map(w -> w.toAbsolutePath().normalize());
  }

  /** The chain of programs {@code argv} would run, each hashed where its file could be read. */
  public ExecRequest resolve(List<String> argv) {
    return resolveWithBinaries(argv).request();
  }

  /**
   * As {@link #resolve}, also returning the bytes hashed, so that the caller can execute exactly
   * those bytes and not whatever the file holds a moment later.
   */
  public Resolution resolveWithBinaries(List<String> argv) {
    List<ExecStep> steps = new ArrayList<>();
    List<Binary> binaries = new ArrayList<>();
    String unresolved = chain(argv, steps, binaries, 0);
    if (steps.isEmpty()) {
      steps.add(ExecStep.named(argv.isEmpty() ? "?" : baseName(argv.get(0))));
    }
    return new Resolution(new ExecRequest(steps, Optional.ofNullable(unresolved)), binaries);
  }

  /** Resolves a program invoked as {@code name} whose binary is the file at {@code path}. */
  public ExecRequest resolveFile(String name, String path) {
    List<String> argv = new ArrayList<>();
    argv.add(path);
    List<ExecStep> steps = new ArrayList<>();
    String unresolved = chain(argv, steps, new ArrayList<>(), 0);
    // the grant names the program as the unit invoked it, not by the file's own name
    if (!steps.isEmpty() && steps.size() == 1) {
      ExecStep only = steps.get(0);
      steps.set(0, new ExecStep(name, only.b3Hex()));
    }
    if (steps.isEmpty()) {
      steps.add(ExecStep.named(name));
    }
    return new ExecRequest(steps, Optional.ofNullable(unresolved));
  }

  /** Appends the steps of {@code argv}; returns why resolution stopped short, or null. */
  private String chain(List<String> argv, List<ExecStep> steps, List<Binary> binaries, int depth) {
    if (depth > MAX_DEPTH) {
      return "wrapper chain deeper than " + MAX_DEPTH;
    }
    if (argv.isEmpty() || argv.get(0).isEmpty()) {
      return "empty command";
    }
    String invoked = argv.get(0);
    String name = baseName(invoked);
    Optional<Path> file = locate(invoked);
    if (file.isEmpty()) {
      steps.add(ExecStep.named(stepName(invoked, null)));
      return "program " + invoked + " not found";
    }
    String stepName = stepName(invoked, file.get());
    byte[] bytes;
    try {
      bytes = read(file.get());
    } catch (IOException e) {
      steps.add(ExecStep.named(stepName));
      return "cannot read " + invoked + ": " + e.getMessage();
    }
    String hash = Blake3.hex(bytes);
    binaries.add(new Binary(invoked, depth, false, hash, bytes));
    Optional<List<String>> shebang = shebang(bytes);
    if (shebang.isPresent()) {
      // the kernel runs: interpreter [arg] script args...
      List<String> interp = new ArrayList<>(shebang.get());
      interp.add(invoked);
      interp.addAll(argv.subList(1, argv.size()));
      ExecStep script = ExecStep.hashed(stepName, hash);
      String why = chain(interp, steps, binaries, depth + 1);
      if (!steps.contains(script)) {
        steps.add(script);
      }
      return why;
    }
    steps.add(ExecStep.hashed(stepName, hash));
    String realName = baseName(file.get().getFileName().toString());
    String rule;
    List<String> ruleArgv = argv;
    if (WrapperRule.isWrapper(name)) {
      rule = name;
    } else if (realName.equals("busybox")) {
      rule = name; // a busybox applet link: the applet is the invoked name
    } else if (WrapperRule.isWrapper(realName)) {
      rule = realName; // a renamed link to a wrapper still behaves as the wrapper
    } else {
      return null;
    }
    if (rule.equals("busybox") && argv.size() > 1 && !argv.get(1).startsWith("-")) {
      // "busybox APPLET args": the applet runs inside the same binary
      List<String> applet = argv.subList(1, argv.size());
      steps.add(ExecStep.hashed(applet.get(0), hash));
      String appletName = applet.get(0);
      if (!WrapperRule.isWrapper(appletName) || appletName.equals("busybox")) {
        return null;
      }
      rule = appletName;
      ruleArgv = applet;
    }
    WrapperRule.Next next = WrapperRule.next(rule, ruleArgv);
    if (next instanceof WrapperRule.Run r) {
      return chain(r.argv(), steps, binaries, depth + 1);
    }
    if (next instanceof WrapperRule.Script s) {
      // the shell opens its operand as a path, relative to its working directory
      String operand = s.path().indexOf('/') >= 0 ? s.path() : "./" + s.path();
      Optional<Path> scriptFile = locateFile(operand);
      if (scriptFile.isEmpty()) {
        steps.add(ExecStep.named(stepName(s.path(), null)));
        return "script " + s.path() + " not found";
      }
      String scriptName = stepName(s.path(), scriptFile.get());
      try {
        byte[] text = read(scriptFile.get());
        String h = Blake3.hex(text);
        binaries.add(new Binary(s.path(), depth, true, h, text));
        steps.add(ExecStep.hashed(scriptName, h));
      } catch (IOException e) {
        steps.add(ExecStep.named(scriptName));
        return "cannot read " + s.path() + ": " + e.getMessage();
      }
      return null;
    }
    if (next instanceof WrapperRule.Opaque o) {
      return o.reason();
    }
    return null;
  }

  /** The interpreter and its optional single argument from a {@code #!} line. */
  private static Optional<List<String>> shebang(byte[] bytes) {
    if (bytes.length < 2 || bytes[0] != '#' || bytes[1] != '!') {
      return Optional.empty();
    }
    int end = 2;
    while (end < bytes.length && end < 256 && bytes[end] != '\n') {
      end++;
    }
    String line = new String(bytes, 2, end - 2, StandardCharsets.UTF_8).trim();
    if (line.isEmpty()) {
      return Optional.empty();
    }
    List<String> out = new ArrayList<>();
    int sp = indexOfBlank(line);
    if (sp < 0) {
      out.add(line);
    } else {
      out.add(line.substring(0, sp));
      String arg = line.substring(sp).trim();
      if (!arg.isEmpty()) {
        out.add(arg); // Linux passes the rest of the line as one argument
      }
    }
    return Optional.of(out);
  }

  private static int indexOfBlank(String s) {
    for (int i = 0; i < s.length(); i++) {
      if (s.charAt(i) == ' ' || s.charAt(i) == '\t') {
        return i;
      }
    }
    return -1;
  }

  /**
   * The name a step is decided by: the file name for a program found through the search path or an
   * absolute path outside the work directory; the whole path (which no name entry can match, so
   * only its hash can allow it) for a relative path or a file inside the work directory.
   */
  private String stepName(String word, Path file) {
    if (word.indexOf('/') < 0) {
      return word;
    }
    boolean relative = !word.startsWith("/");
    boolean inWorkDir = file != null && workDir.isPresent() && file.startsWith(workDir.get());
    return relative || inWorkDir ? word : baseName(word);
  }

  /** The file's bytes, refused past {@link #MAX_BINARY_BYTES}. */
  private static byte[] read(Path file) throws IOException {
    try (InputStream in = Files.newInputStream(file)) {
      byte[] bytes = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, MAX_BINARY_BYTES + 1));
      if (bytes.length > MAX_BINARY_BYTES) {
        throw new IOException("larger than " + MAX_BINARY_BYTES + " bytes");
      }
      return bytes;
    }
  }

  /**
   * The executable file for a command word: a search-path hit for a bare name, never the daemon's
   * own PATH or working directory; an absolute path inside the root; a relative path under the work
   * directory.
   */
  private Optional<Path> locate(String command) {
    if (command.indexOf('/') >= 0) {
      return locateFile(command);
    }
    for (String dir : searchPath) {
      Optional<Path> f = locateFile(dir + "/" + command);
      if (f.isPresent() && Files.isExecutable(f.get())) {
        return f;
      }
    }
    return Optional.empty();
  }

  /** A regular file at {@code path} inside the root, following symlinks within the root. */
  private Optional<Path> locateFile(String path) {
    Path p = inRoot(path);
    for (int i = 0; i < MAX_SYMLINKS && p != null; i++) {
      if (!Files.isSymbolicLink(p)) {
        return Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)
            ? Optional.of(p)
            : Optional.empty();
      }
      try {
        String target = Files.readSymbolicLink(p).toString();
        p = target.startsWith("/") ? inRoot(target) : checked(p.getParent().resolve(target));
      } catch (IOException e) {
        return Optional.empty();
      }
    }
    return Optional.empty();
  }

  private Path inRoot(String path) {
    if (!path.startsWith("/")) {
      // a relative path is opened in the program's working directory, and nowhere else
      return workDir
          .map(w -> w.resolve(path).normalize())
          .filter(p -> p.startsWith(workDir.get()))
          .map(this::checked)
          .orElse(null);
    }
    String rel = path;
    while (rel.startsWith("/")) {
      rel = rel.substring(1);
    }
    return checked(root.resolve(rel));
  }

  private Path checked(Path p) {
    Path n = p.toAbsolutePath().normalize();
    return n.startsWith(root) ? n : null;
  }

  private static String baseName(String path) {
    int slash = path.lastIndexOf('/');
    return slash >= 0 ? path.substring(slash + 1) : path;
  }
}
