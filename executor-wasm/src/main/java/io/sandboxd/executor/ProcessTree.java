package io.sandboxd.executor;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Every process an exec starts, confined so that none outlives the call: started inside a fresh
 * cgroup v2 (CPU read from its {@code cpu.stat}, which counts every descendant, live or exited;
 * ended process by process, never the daemon: {@link #killCgroup}) when the daemon's own cgroup
 * accepts children, otherwise as the init of a fresh PID namespace (the kernel kills the whole
 * namespace when its init dies; CPU is sampled from {@code /proc} of the tree, a lower bound for
 * what ran between two samples). On a host with a cgroup v1 pids hierarchy, either way, the tree
 * also joins a child of the daemon's cgroup there ({@link PidsCgroupV1}), which holds its processes
 * at every fork.
 */
final class ProcessTree implements AutoCloseable {
  /** Forces the PID-namespace confinement (tests of the fallback). */
  static final String FORCE_PIDNS_PROPERTY = "sandboxd.exec.pidns";

  static final String CGROUP_PREFIX = "sandboxd-exec-";
  private static final AtomicLong COUNTER = new AtomicLong();
  private static final long CLOCK_TICK_NANOS = 10_000_000L; // USER_HZ is 100 on Linux
  private static volatile Optional<Optional<Path>> cgroupParent = Optional.empty();
  // Whether this process ever started a tree in a PID namespace rather than a cgroup.
  private static volatile boolean outsideCgroups;

  private final Process process;
  private final Optional<Path> cgroup;
  // The tree's directory in a cgroup v1 pids hierarchy (PidsCgroupV1), where the host has one.
  private final Optional<Path> pidsV1;
  // The events file of the pids controller that holds the tree (v1's, or its v2 cgroup's).
  private final Optional<Path> pidsEvents;
  private volatile long cpuSeen;
  private volatile boolean closed;

  private ProcessTree(Process process, Optional<Path> cgroup, Optional<Path> pidsV1) {
    this.process = process;
    this.cgroup = cgroup;
    this.pidsV1 = pidsV1;
    Optional<Path> held =
        pidsV1.isPresent()
            ? pidsV1
            : cgroup.filter(dir -> Files.exists(dir.resolve("pids.events")));
    this.pidsEvents = held.map(dir -> dir.resolve("pids.events"));
  }

  /**
   * Open files for each of a tree's processes (RLIMIT_NOFILE): the JVM raises its own limit to the
   * hard one, often half a million, which each process would inherit; every open file holds kernel
   * memory counted as no process's. With the node's bound on processes, the tree's files are
   * bounded too. Programs are written for this common default.
   */
  static final int OPEN_FILES_PER_PROCESS = 1024;

  /** No limit on the size of a file the tree writes. */
  static final long NO_FILE_LIMIT = Long.MAX_VALUE;

  /**
   * Starts {@code argv} (its first word an absolute path) in {@code cwd} with exactly {@code env},
   * confined, no file it writes growing past {@code fileLimitBytes} (RLIMIT_FSIZE, rounded down to
   * 512-byte blocks: a write past it fails, and the writer gets SIGXFSZ), no process's data growing
   * past {@code bounds}' memory (RLIMIT_DATA) and no core dumped. In a cgroup whose parent enables
   * the pids or memory controller, the tree as a whole is held to {@code bounds} by the kernel too,
   * and so are its processes where a cgroup v1 pids hierarchy is mounted ({@link PidsCgroupV1}).
   * Under Landlock (where the kernel has it) the tree reads and executes only beneath the system's
   * directories and {@code readable}, never {@code hidden}, and writes only beneath {@code cwd};
   * under seccomp (where the kernel has it) it opens no socket but a {@code socketpair}; it holds
   * no capability of the daemon's, even where the daemon runs as root. In a cgroup below {@code
   * parent} ({@link #cgroupParent()} for the daemon's own), else in a fresh PID namespace. Throws
   * when neither confinement is available: an unconfined child is never started.
   */
  static ProcessTree start(
      List<String> argv,
      Path cwd,
      Map<String, String> env,
      long fileLimitBytes,
      TreeBounds bounds,
      List<Path> readable,
      List<Path> hidden,
      Optional<Path> parent)
      throws IOException {
    List<String> command = new ArrayList<>();
    Optional<Path> cg = Optional.empty();
    String limits = limits(fileLimitBytes, bounds.maxMemoryBytes());
    String name = CGROUP_PREFIX + ProcessHandle.current().pid() + "-" + COUNTER.incrementAndGet();
    Optional<Path> pids = Optional.empty();
    Optional<Path> pidsParent = PidsCgroupV1.parent();
    if (pidsParent.isPresent()) {
      // In a PID namespace unshare, forked like the rest from the joined thread (launch), is the
      // tree's too.
      long tasks = bounds.maxProcesses() + (parent.isPresent() ? 0L : 1L);
      pids = Optional.of(PidsCgroupV1.open(pidsParent.get(), name, tasks));
    }
    if (parent.isPresent()) {
      Path dir = parent.get().resolve(name);
      try {
        Files.createDirectory(dir);
      } catch (IOException e) {
        pids.ifPresent(ProcessTree::removeQuietly);
        throw e;
      }
      cg = Optional.of(dir);
      try {
        bound(dir, bounds);
      } catch (IOException e) {
        removeQuietly(dir);
        pids.ifPresent(ProcessTree::removeQuietly);
        throw e;
      }
      // The shell joins the cgroup before it becomes the program, so no descendant starts outside.
      command.add("/bin/sh");
      command.add("-c");
      command.add("echo $$ > \"$0\" && " + limits + " && exec \"$@\"");
      command.add(dir.resolve("cgroup.procs").toString());
    } else {
      outsideCgroups = true;
      command.add(unshare());
      // A user namespace even for a root daemon: the launching thread holds no capability to give
      // unshare, and inside it the tree's capabilities reach nothing of the node's. A non-root
      // daemon's uid is mapped to root there; mapping root's would need CAP_SETFCAP, and left
      // unmapped, the tree holds no capability over any file.
      command.add("--user");
      if (!isRoot()) {
        command.add("--map-root-user");
      }
      command.addAll(List.of("--fork", "--pid", "--kill-child"));
      if (Landlock.abi() < 1) {
        // Under Landlock nothing mounts: the tree sees the node's /proc, and Landlock keeps it from
        // tracing or reading the memory of any process outside it.
        command.add("--mount-proc");
      }
      command.add("--");
      command.addAll(List.of("/bin/sh", "-c", limits + " && exec \"$@\"", "sh"));
    }
    command.addAll(argv);
    ProcessBuilder pb = new ProcessBuilder(command).directory(cwd.toFile());
    pb.environment().clear();
    pb.environment().putAll(env);
    List<Path> readAndExecute = new ArrayList<>(Landlock.SYSTEM);
    readAndExecute.addAll(readable);
    // The v1 cgroup is joined by the launching thread, not the tree: no file of it is the tree's
    // to write, so the tree cannot move another process (the daemon) into it.
    Landlock.Rules rules =
        new Landlock.Rules(
            readAndExecute,
            hidden,
            List.of(cwd),
            cg.map(dir -> List.of(dir.resolve("cgroup.procs"))).orElse(List.of()));
    try {
      return new ProcessTree(launch(pb, rules, pids), cg, pids);
    } catch (IOException | RuntimeException e) {
      // Nothing started (a launch that fails throws either): its cgroups are empty.
      cg.ifPresent(ProcessTree::removeQuietly);
      pids.ifPresent(ProcessTree::removeQuietly);
      throw e;
    }
  }

  /**
   * Starts {@code pb} from a thread made for it, holding no capability and restricted to {@code
   * rules} and the {@link SeccompFilter} first, so that the tree, and nothing else of the daemon,
   * runs under them, and in the v1 pids cgroup {@code pidsV1} where given. Waits for the start
   * whatever interrupts the caller: a tree started is always handed back, to be closed.
   */
  private static Process launch(ProcessBuilder pb, Landlock.Rules rules, Optional<Path> pidsV1)
      throws IOException {
    Object[] outcome = new Object[1];
    Thread launcher =
        new Thread(
            () -> {
              try {
                // Landlock last: the others' classes are loaded from files it would then hide.
                // v1 keeps threads apart: this one joins the tree's pids cgroup, so the child it
                // forks starts there (and the thread leaves it when it ends, just below).
                if (pidsV1.isPresent()) {
                  Files.writeString(
                      pidsV1.get().resolve("tasks"),
                      Files.readSymbolicLink(Path.of("/proc/thread-self"))
                          .getFileName()
                          .toString());
                }
                ThreadCapabilities.clearThisThread();
                SeccompFilter.restrictThisThread();
                Landlock.restrictThisThread(rules);
                outcome[0] = pb.start();
              } catch (IOException | RuntimeException e) {
                outcome[0] = e;
              }
            },
            "exec-launch");
    launcher.setDaemon(true);
    launcher.start();
    boolean interrupted = false;
    while (launcher.isAlive()) {
      try {
        launcher.join();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    if (outcome[0] instanceof Process p) {
      return p;
    }
    if (outcome[0] instanceof IOException e) {
      throw e;
    }
    if (outcome[0] instanceof RuntimeException e) {
      throw e;
    }
    throw new IOException("the exec launcher ended without starting the program");
  }

  /**
   * Holds the cgroup {@code dir} to {@code bounds} where its parent enables the controllers (their
   * files are there only then); elsewhere the census while the tree runs is the bound.
   */
  static void bound(Path dir, TreeBounds bounds) throws IOException {
    if (Files.exists(dir.resolve("pids.max"))) {
      Files.writeString(dir.resolve("pids.max"), String.valueOf(bounds.maxProcesses()));
    }
    if (Files.exists(dir.resolve("memory.max"))) {
      Files.writeString(dir.resolve("memory.max"), String.valueOf(bounds.maxMemoryBytes()));
      if (Files.exists(dir.resolve("memory.swap.max"))) {
        // Swapped out is still held: without this the tree could move past the bound into swap.
        Files.writeString(dir.resolve("memory.swap.max"), "0");
      }
    }
  }

  /**
   * The shell words that set the tree's limits before it becomes the program: no core file (a crash
   * would otherwise write one as large as the program's memory where it runs), files no larger than
   * {@code fileLimitBytes} and no process's data (its heap and private writable mappings) larger
   * than {@code dataBytes}, no process holding more than {@link #OPEN_FILES_PER_PROCESS} open
   * files, or the hard limits where those are lower.
   */
  static String limits(long fileLimitBytes, long dataBytes) {
    String words =
        "ulimit -c 0 && "
            + lowered("-d", Math.max(0, dataBytes) / 1024)
            + " && "
            + lowered("-n", OPEN_FILES_PER_PROCESS);
    if (fileLimitBytes == NO_FILE_LIMIT) {
      return words;
    }
    return words + " && " + lowered("-f", Math.max(0, fileLimitBytes) / 512);
  }

  /** {@code ulimit FLAG value}, or the hard limit when the value is above it. */
  private static String lowered(String flag, long value) {
    return "{ ulimit "
        + flag
        + " "
        + value
        + " 2>/dev/null || ulimit "
        + flag
        + " \"$(ulimit -H "
        + flag
        + ")\"; }";
  }

  Process process() {
    return process;
  }

  /** CPU time of the whole tree so far (never decreasing). */
  long cpuNanos() {
    if (closed) {
      return cpuSeen;
    }
    long now = cgroup.isPresent() ? cgroupCpu(cgroup.get()) : namespaceCpu();
    synchronized (this) {
      if (now > cpuSeen) {
        cpuSeen = now;
      }
      return cpuSeen;
    }
  }

  /**
   * Whether the kernel has refused the tree a process or thread past its bound: the {@code max}
   * count of its pids controller's events (v2, or the v1 hierarchy's), which a forker that exits at
   * its first refused fork (as sh does) leaves behind for the count after it. False where no pids
   * controller holds the tree.
   */
  boolean tasksRefused() {
    if (pidsEvents.isEmpty()) {
      return false;
    }
    try {
      for (String line : Files.readAllLines(pidsEvents.get())) {
        if (line.startsWith("max ")) {
          return Long.parseLong(line.substring(4).trim()) > 0;
        }
      }
    } catch (IOException | NumberFormatException e) {
      // the cgroup is gone: nothing refused that we can see
    }
    return false;
  }

  /**
   * What a tree holds at one moment: its processes and the memory they hold of their own, and
   * whether the daemon's own process is among them (moved into its cgroup by the tree).
   */
  record Census(int processes, long memoryBytes, boolean holdsDaemon) {}

  /**
   * The tree's processes now and the anonymous and shared memory they hold resident, counted until
   * more than {@code maxProcesses} are found (then the walk stops: a flood is not walked to its
   * end). A sample: a process that starts or exits during the walk may be missed.
   */
  Census census(int maxProcesses) {
    List<Long> members =
        cgroup.isPresent() ? pids(cgroup.get()) : namespaceMembers(maxProcesses + 1);
    boolean holdsDaemon = members.remove(ProcessHandle.current().pid());
    int counted = Math.min(members.size(), maxProcesses + 1);
    long bytes = 0;
    for (int i = 0; i < counted; i++) {
      bytes += ownMemory(members.get(i));
    }
    return new Census(counted, bytes, holdsDaemon);
  }

  /**
   * The processes below unshare (the namespace's init, the program, and its descendants: an orphan
   * is the init's), found through each task's children list, at most {@code most} of them.
   */
  private List<Long> namespaceMembers(int most) {
    List<Long> found = new ArrayList<>();
    java.util.ArrayDeque<Long> parents = new java.util.ArrayDeque<>();
    parents.add(process.pid());
    while (!parents.isEmpty() && found.size() < most) {
      long parent = parents.poll();
      try (var tasks = Files.newDirectoryStream(Path.of("/proc/" + parent + "/task"))) {
        for (Path task : tasks) {
          String children = Files.readString(task.resolve("children"), StandardCharsets.US_ASCII);
          for (String child : children.trim().split(" ")) {
            if (!child.isEmpty() && found.size() < most) {
              long pid = Long.parseLong(child);
              found.add(pid);
              parents.add(pid);
            }
          }
        }
      } catch (IOException | RuntimeException e) {
        // exited during the walk: it holds nothing now
      }
    }
    return found;
  }

  /** RssAnon plus RssShmem of {@code pid} in bytes; 0 once it is gone. */
  private static long ownMemory(long pid) {
    try {
      long kib = 0;
      for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
        if (line.startsWith("RssAnon:") || line.startsWith("RssShmem:")) {
          String v = line.substring(line.indexOf(':') + 1).trim();
          kib += Long.parseLong(v.substring(0, v.indexOf(' ')));
        }
      }
      return kib * 1024;
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }

  /** Kills every process of the tree and waits until they are gone; the CPU reading is final. */
  @Override
  public void close() {
    synchronized (process) {
      closeOnce();
    }
  }

  private void closeOnce() {
    if (closed) {
      return;
    }
    if (cgroup.isPresent()) {
      Path cg = cgroup.get();
      killCgroup(cg);
      long end = cgroupCpu(cg);
      synchronized (this) {
        if (end > cpuSeen) {
          cpuSeen = end;
        }
      }
      process.destroyForcibly();
      removeQuietly(cg);
    } else {
      cpuNanos();
      // SIGKILL to unshare: --kill-child takes its child, the namespace's init, and with it the
      // rest.
      process.destroyForcibly();
    }
    try {
      process.waitFor(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    pidsV1.ifPresent(
        dir -> {
          // Empty once the namespace's end or the v2 cgroup's kill has taken the tree (the usual
          // case, one rmdir); otherwise what is left is killed first.
          try {
            Files.delete(dir);
          } catch (IOException busy) {
            killCgroup(dir);
            removeQuietly(dir);
          }
        });
    closed = true;
  }

  /**
   * Kills every process of the cgroup {@code cg} but the daemon until none is left, one by one
   * (start time checked, so a reused pid is not signalled), and moves the daemon back to the parent
   * cgroup if it is there. A tree may write its own cgroup.procs (its shell joins through it), and
   * so may move the daemon (the same user) in at any moment: {@code cgroup.kill}, which kills
   * whatever the cgroup holds when it is written, could then end the daemon.
   */
  static void killCgroup(Path cg) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    long self = ProcessHandle.current().pid();
    while (System.nanoTime() < deadline) {
      List<Long> pids = pids(cg);
      if (pids.remove(self)) {
        try {
          Files.writeString(cg.getParent().resolve("cgroup.procs"), String.valueOf(self));
        } catch (IOException e) {
          // not ours to move back: the others are still killed
        }
      }
      if (pids.isEmpty()) {
        return;
      }
      for (long pid : pids) {
        ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
      }
      try {
        Thread.sleep(1);
      } catch (InterruptedException e) {
        // keep killing: an interrupted run must still leave nothing behind
        Thread.currentThread().interrupt();
      }
    }
  }

  private static List<Long> pids(Path cg) {
    List<Long> out = new ArrayList<>();
    try {
      for (String line : Files.readAllLines(cg.resolve("cgroup.procs"))) {
        if (!line.isBlank()) {
          out.add(Long.parseLong(line.trim()));
        }
      }
    } catch (IOException | NumberFormatException e) {
      // an unreadable or vanished cgroup holds nothing we can list
    }
    return out;
  }

  private static long cgroupCpu(Path cg) {
    try {
      for (String line : Files.readAllLines(cg.resolve("cpu.stat"))) {
        if (line.startsWith("usage_usec ")) {
          return Long.parseLong(line.substring("usage_usec ".length()).trim()) * 1000L;
        }
      }
    } catch (IOException | NumberFormatException e) {
      // gone already: the last reading stands
    }
    return 0;
  }

  /** Own and reaped-children CPU of unshare and of every live process below it. */
  private long namespaceCpu() {
    long ticks = statTicks(process.pid());
    for (ProcessHandle h : (Iterable<ProcessHandle>) process.descendants()::iterator) {
      ticks += statTicks(h.pid());
    }
    return ticks * CLOCK_TICK_NANOS;
  }

  private static long statTicks(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"), StandardCharsets.UTF_8);
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      // after "pid (comm) ": state is field 0, utime 11, stime 12, cutime 13, cstime 14
      return Long.parseLong(f[11])
          + Long.parseLong(f[12])
          + Long.parseLong(f[13])
          + Long.parseLong(f[14]);
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }

  static void removeQuietly(Path cg) {
    for (int i = 0; i < 100; i++) {
      try {
        Files.deleteIfExists(cg);
        return;
      } catch (IOException e) {
        try {
          Thread.sleep(2);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  /** Whether any tree this process started lives in a PID namespace, not an exec cgroup. */
  static boolean anyOutsideCgroups() {
    return outsideCgroups;
  }

  /** The daemon's own cgroup v2 directory when it accepts child cgroups, probed once. */
  static Optional<Path> cgroupParent() {
    Optional<Optional<Path>> known = cgroupParent;
    if (known.isPresent()) {
      return known.get();
    }
    Optional<Path> found =
        Boolean.getBoolean(FORCE_PIDNS_PROPERTY) ? Optional.empty() : probeCgroup();
    cgroupParent = Optional.of(found);
    return found;
  }

  private static Optional<Path> probeCgroup() {
    try {
      String own = null;
      for (String line : Files.readAllLines(Path.of("/proc/self/cgroup"))) {
        if (line.startsWith("0::")) {
          own = line.substring(3);
        }
      }
      String mount = null;
      for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
        int dash = line.indexOf(" - ");
        if (dash > 0 && line.substring(dash + 3).startsWith("cgroup2 ")) {
          mount = line.split(" ")[4];
        }
      }
      if (own == null || mount == null) {
        return Optional.empty();
      }
      Path parent = Path.of(mount, own.startsWith("/") ? own.substring(1) : own).normalize();
      Path probe = parent.resolve(CGROUP_PREFIX + "probe-" + ProcessHandle.current().pid());
      Files.createDirectory(probe);
      boolean usable =
          Files.isRegularFile(probe.resolve("cpu.stat"))
              && Files.isWritable(probe.resolve("cgroup.procs"));
      Files.delete(probe);
      if (usable) {
        sweepStale(parent);
      }
      return usable ? Optional.of(parent) : Optional.empty();
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    }
  }

  /**
   * Ends what a daemon that died left behind: each exec cgroup whose daemon pid (the name's first
   * number) is no longer alive has its processes killed and is removed, so a crash cannot leave
   * exec trees running outside any run.
   */
  static int sweepStale(Path parent) {
    int swept = 0;
    try (var dirs = Files.newDirectoryStream(parent, CGROUP_PREFIX + "*")) {
      for (Path cg : dirs) {
        String rest = cg.getFileName().toString().substring(CGROUP_PREFIX.length());
        String pid = rest.startsWith("probe-") ? rest.substring(6) : rest.split("-")[0];
        long owner;
        try {
          owner = Long.parseLong(pid);
        } catch (NumberFormatException e) {
          continue;
        }
        if (owner == ProcessHandle.current().pid()
            || ProcessHandle.of(owner).map(ProcessHandle::isAlive).orElse(false)) {
          continue;
        }
        if (!Files.isWritable(cg.resolve("cgroup.procs"))) {
          continue; // not ours to empty (another user's, or already gone)
        }
        try {
          // One by one, as at a tree's close (killCgroup): a stale tree may have moved us in.
          killCgroup(cg);
          // rmdir succeeds once the killed processes are gone; a later start retries otherwise.
          for (int i = 0; i < 50 && Files.exists(cg); i++) {
            try {
              Files.delete(cg);
            } catch (IOException busy) {
              Thread.sleep(10);
            }
          }
          if (!Files.exists(cg)) {
            swept++;
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
      }
    } catch (IOException | RuntimeException e) {
      // A sweep is housekeeping: it never stops exec from working.
    }
    return swept;
  }

  private static boolean isRoot() {
    try {
      return ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:uid")).intValue() == 0;
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  private static String unshare() throws IOException {
    for (String p : List.of("/usr/bin/unshare", "/bin/unshare")) {
      if (Files.isExecutable(Path.of(p))) {
        return p;
      }
    }
    throw new IOException("no cgroup v2 to confine exec children in, and no unshare(1)");
  }
}
