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

  /** The largest binary or script the resolver reads per step. */
  public static final long MAX_BINARY_BYTES = 256L << 20;

  /**
   * The most the resolver reads for one argument vector, all steps together: a chain of sixteen
   * interpreters, each a sparse file of {@link #MAX_BINARY_BYTES} (a script naming itself, say),
   * would otherwise cost the node 4 GiB of reading and hashing for one exec call.
   */
  public static final long MAX_CHAIN_BYTES = 2 * MAX_BINARY_BYTES;

  /** What {@link #shebang} reads of a file: the kernel reads no more of a {@code #!} line. */
  private static final int HEAD_BYTES = 256;

  private final Path root;
  private final List<String> searchPath;
  private final Optional<Path> workDir;

  /**
   * One file the resolver hashed: {@code word} is the command word (or script operand) that named
   * it, {@code depth} 0 for the program the caller named, {@code file} where it was read and {@code
   * size} how many bytes it held then. The bytes are not kept (a binary may be 256 MiB): whoever
   * runs it copies the file and checks the copy's hash against {@code b3Hex}, so what runs is what
   * was decided on.
   */
  public record Binary(
      String word, int depth, boolean script, String b3Hex, Path file, long size) {}

  /** What {@code argv} would run, and every file hashed to decide it. */
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
   * As {@link #resolve}, also returning the files hashed and their hashes, so that the caller can
   * execute exactly those bytes and not whatever the file holds a moment later.
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
    Read read;
    try {
      read = read(file.get(), binaries);
    } catch (IOException e) {
      steps.add(ExecStep.named(stepName));
      return "cannot read " + invoked + ": " + e.getMessage();
    }
    String hash = read.b3Hex();
    binaries.add(new Binary(invoked, depth, false, hash, file.get(), read.size()));
    Optional<List<String>> shebang = shebang(read.head());
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
        Read text = read(scriptFile.get(), binaries);
        binaries.add(
            new Binary(s.path(), depth, true, text.b3Hex(), scriptFile.get(), text.size()));
        steps.add(ExecStep.hashed(scriptName, text.b3Hex()));
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
    while (end < bytes.length && end < HEAD_BYTES && bytes[end] != '\n') {
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

  /** A file's hash and size, and its first bytes (where a {@code #!} line would be). */
  private record Read(String b3Hex, long size, byte[] head) {}

  /**
   * Hashes the file as it streams by, holding one buffer; refused past {@link #MAX_BINARY_BYTES},
   * or past {@link #MAX_CHAIN_BYTES} with the files {@code before} it in the chain.
   */
  private static Read read(Path file, List<Binary> before) throws IOException {
    long budget = MAX_CHAIN_BYTES;
    for (Binary b : before) {
      budget -= b.size();
    }
    long max = Math.min(MAX_BINARY_BYTES, budget);
    Blake3.Hasher hasher = new Blake3.Hasher();
    byte[] head;
    long total;
    try (InputStream in = RegularFile.open(file)) {
      head = in.readNBytes(HEAD_BYTES);
      hasher.update(head, 0, head.length);
      total = head.length + hasher.update(in, null, max - head.length);
    }
    if (total > max) {
      throw new IOException(
          total > MAX_BINARY_BYTES
              ? "larger than " + MAX_BINARY_BYTES + " bytes"
              : "the files of the chain pass " + MAX_CHAIN_BYTES + " bytes");
    }
    return new Read(hasher.hex(), total, head);
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
