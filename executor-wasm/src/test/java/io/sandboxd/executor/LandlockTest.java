package io.sandboxd.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an exec'd tree reaches on the node, by attack class: the daemon's files beside its working
 * directory (the node key, the store, other modules' storage), files elsewhere the daemon may
 * write, RAM-backed /dev/shm, TCP connections, signals to the daemon, and sockets of every other
 * kind (the seccomp filter's share). Each is a command whose exit status or output says whether the
 * kernel let it through, under either confinement.
 */
class LandlockTest {
  @TempDir Path state;

  /** A fresh PID namespace, and a cgroup where this machine delegates one to the test JVM. */
  private static List<Optional<Path>> confinements() {
    List<Optional<Path>> all = new ArrayList<>();
    all.add(Optional.empty());
    ProcessTree.cgroupParent().ifPresent(p -> all.add(Optional.of(p)));
    return all;
  }

  /** The exit status of {@code command} run by bash as a tree working in {@code cwd}. */
  private static int exit(Path cwd, Optional<Path> parent, String command) throws Exception {
    return exit(cwd, parent, List.of(), List.of(), command);
  }

  /**
   * As {@link #exit(Path, Optional, String)}, reading beneath {@code readable} but {@code hidden}.
   */
  private static int exit(
      Path cwd, Optional<Path> parent, List<Path> readable, List<Path> hidden, String command)
      throws Exception {
    return run(cwd, parent, readable, hidden, List.of("/bin/bash", "-c", command)).exit();
  }

  /** Which confinement an assertion's message is about. */
  private static String where(Optional<Path> parent) {
    return parent.map(Path::toString).orElse("a PID namespace") + ": ";
  }

  /** How a tree ended: its exit status and what it wrote to its standard output. */
  private record Ran(int exit, String out) {}

  /** How {@code script} run by python3 with {@code args} as a tree working in {@code cwd} ended. */
  private static Ran python(Path cwd, Optional<Path> parent, String script, String... args)
      throws Exception {
    List<String> argv = new ArrayList<>(List.of("/usr/bin/python3", "-c", script));
    argv.addAll(List.of(args));
    return run(cwd, parent, List.of(), List.of(), argv);
  }

  /**
   * A Python script that runs {@code body} and prints what got through: {@code got} collects names,
   * {@code refused(name, r)} adds one whose libc call did not fail with EACCES, {@code libc} is the
   * C library.
   */
  private static String probe(String... body) {
    List<String> lines =
        new ArrayList<>(
            List.of(
                "import ctypes, errno, os, platform, socket, sys",
                "libc = ctypes.CDLL(None, use_errno=True)",
                "got = []",
                "def refused(name, r):",
                "    if r != -1 or ctypes.get_errno() != errno.EACCES:",
                "        got.append(name + ' errno ' + str(ctypes.get_errno()))"));
    lines.addAll(List.of(body));
    lines.add("print(' '.join(got))");
    return String.join("\n", lines);
  }

  private static Ran run(
      Path cwd, Optional<Path> parent, List<Path> readable, List<Path> hidden, List<String> argv)
      throws Exception {
    try (ProcessTree tree =
        ProcessTree.start(
            argv,
            cwd,
            Map.of("PATH", "/usr/bin:/bin"),
            ProcessTree.NO_FILE_LIMIT,
            TreeBounds.DEFAULT,
            readable,
            hidden,
            parent)) {
      Process p = tree.process();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(20, TimeUnit.SECONDS)) {
        throw new AssertionError(argv + " did not end");
      }
      return new Ran(p.exitValue(), out);
    }
  }

  @Test
  void aTreeReachesItsWorkingDirectoryAndTheSystemAndNothingElseOfTheDaemon() throws Exception {
    assumeTrue(Landlock.abi() >= 1, "this kernel has no Landlock");
    Path work = Files.createDirectories(state.resolve("storage/module-a"));
    Path other = file("storage/module-b/secret", "another module's file").getParent();
    Path key = file("keys/node.ed25519", "the node's key");
    Path outside = Files.createTempDirectory("landlock-outside");
    long daemon = ProcessHandle.current().pid();
    try (ServerSocket listening = new ServerSocket(0)) {
      int port = listening.getLocalPort();
      for (Optional<Path> parent : confinements()) {
        String where = where(parent);
        // What a program needs: the system's files and programs, its own directory, /dev/null.
        assertEquals(0, exit(work, parent, "cat /etc/passwd /bin/sh > /dev/null"), where);
        assertEquals(0, exit(work, parent, "echo x > mine && mkdir d && mv mine d/ && rm -r d"));
        assertEquals(0, exit(work, parent, "head -c 10 /dev/urandom > /dev/null"), where);
        // What it must not reach: the daemon's key, another module's storage, and listing them.
        assertEquals(1, exit(work, parent, "cat " + key), where + "read the node key");
        assertEquals(1, exit(work, parent, "cat " + other.resolve("secret")), where);
        assertEquals(2, exit(work, parent, "ls " + state), where + "listed the state directory");
        assertEquals(1, exit(work, parent, "echo x > " + other.resolve("planted")), where);
        assertEquals(1, exit(work, parent, "echo x > " + outside.resolve("x")), where);
        assertEquals(1, exit(work, parent, "rm " + key), where + "removed the node key");
        assertEquals(1, exit(work, parent, "echo x > /dev/shm/landlock-test"), where);
        if (Landlock.abi() >= 4) {
          assertEquals(
              1,
              exit(work, parent, "exec 3<>/dev/tcp/127.0.0.1/" + port),
              where + "connected over TCP");
        }
        if (Landlock.abi() >= 6) {
          assertEquals(1, exit(work, parent, "kill -0 " + daemon), where + "signalled the daemon");
        }
      }
      assertEquals("the node's key", Files.readString(key, StandardCharsets.UTF_8));
      assertFalse(Files.exists(other.resolve("planted")), "a file was planted in another module");
    } finally {
      Files.deleteIfExists(outside.resolve("x"));
      Files.deleteIfExists(outside);
    }
  }

  /**
   * The powercap tree's zones as sysfs lays them out: the class directory holds links into the
   * devices tree, which a tree may read. A zone's device directory hidden is hidden by either path,
   * through the class directory's link too, and nothing beside it is.
   */
  @Test
  void aHiddenDirectoryIsHiddenThroughALinkToItToo() throws Exception {
    assumeTrue(Landlock.abi() >= 1, "this kernel has no Landlock");
    Path work = Files.createDirectories(state.resolve("work"));
    Path zone = file("sys/devices/virtual/powercap/zone-0/energy_uj", "123").getParent();
    Path beside = file("sys/devices/virtual/net/lo/mtu", "65536");
    Path root = Files.createDirectories(state.resolve("sys/class/powercap"));
    Files.createSymbolicLink(root.resolve("zone-0"), zone);
    List<Path> readable = List.of(state.resolve("sys"));
    List<Path> hidden = List.of(zone);
    for (Optional<Path> parent : confinements()) {
      String where = where(parent);
      assertEquals(1, exit(work, parent, readable, hidden, "cat " + zone.resolve("energy_uj")));
      assertEquals(
          1, exit(work, parent, readable, hidden, "cat " + root.resolve("zone-0/energy_uj")));
      assertEquals(0, exit(work, parent, readable, hidden, "cat " + beside), where);
    }
  }

  /** Writes {@code text} to {@code relative} beneath the state directory, parents made. */
  private Path file(String relative, String text) throws java.io.IOException {
    Path f = state.resolve(relative);
    Files.createDirectories(f.getParent());
    return Files.writeString(f, text);
  }

  @Test
  void theNodesOwnFilesStayHiddenBeneathADirectoryATreeMayRead() throws Exception {
    assumeTrue(Landlock.abi() >= 1, "this kernel has no Landlock");
    // As if the operator kept the state, or a secret, beneath /opt or /etc.
    Path work = Files.createDirectories(state.resolve("work"));
    Path shared = file("opt/tool/data", "a tool's data").getParent();
    Path keys = file("opt/sandboxd/keys/node.ed25519", "the node's key").getParent();
    Path secret = file("opt/sandboxd/api-key", "a secret");
    file("opt/sandboxd/notes", "beside the secret");
    List<Path> readable = List.of(state.resolve("opt"));
    List<Path> hidden = List.of(keys, secret);
    for (Optional<Path> parent : confinements()) {
      String where = where(parent);
      assertEquals(0, exit(work, parent, readable, hidden, "cat " + shared.resolve("data")), where);
      assertEquals(
          0, exit(work, parent, readable, hidden, "cat " + state.resolve("opt/sandboxd/notes")));
      assertEquals(
          1, exit(work, parent, readable, hidden, "cat " + keys.resolve("node.ed25519")), where);
      assertEquals(1, exit(work, parent, readable, hidden, "cat " + secret), where);
      assertEquals(2, exit(work, parent, readable, hidden, "ls " + keys), where);
    }
    // Where a readable directory is granted entry by entry (it holds a hidden path), an entry that
    // links to another hidden path's parent leads around nothing.
    Path privateDir = file("private/keys/node.ed25519", "the node's key").getParent();
    file("private/open", "not hidden");
    Files.createSymbolicLink(state.resolve("opt/link"), state.resolve("private"));
    List<Path> hiddenElsewhere = List.of(keys, privateDir);
    for (Optional<Path> parent : confinements()) {
      String where = where(parent);
      assertEquals(
          1,
          exit(
              work,
              parent,
              readable,
              hiddenElsewhere,
              "cat opt/link/keys/node.ed25519".replace("opt/", state.resolve("opt") + "/")),
          where + "read the key through a link");
      assertEquals(
          0,
          exit(work, parent, readable, hiddenElsewhere, "cat " + state.resolve("opt/link/open")),
          where);
    }
  }

  /**
   * Each socket a tree could reach the node's services or the network with, past Landlock (which
   * governs TCP only): UDP to a listening port, a unix socket by path, TCP over IPv6, netlink, and
   * io_uring, whose operations open sockets under no system call a filter sees; and each kernel
   * object that would outlive the tree: System V shared memory, semaphores and message queues, a
   * POSIX message queue, a key. A pair made by {@code socketpair} still works. The Python script
   * prints each one that got through.
   */
  @Test
  void aTreeOpensNoSocketButAPairAndLeavesNoKernelObjectBehind() throws Exception {
    assumeTrue(SeccompFilter.available(), "this kernel or machine takes no seccomp filter");
    assumeTrue(Files.isExecutable(Path.of("/usr/bin/python3")), "no python3 here");
    Path work = Files.createDirectories(state.resolve("work"));
    Path unixPath = state.resolve("service.sock");
    try (java.net.DatagramSocket udp = new java.net.DatagramSocket(0);
        java.nio.channels.ServerSocketChannel unix =
            java.nio.channels.ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
      unix.bind(java.net.UnixDomainSocketAddress.of(unixPath));
      udp.setSoTimeout(300);
      String script =
          probe(
              "def tried(name, f):",
              "    try:",
              "        f()",
              "        got.append(name)",
              "    except OSError as e:",
              "        if e.errno != errno.EACCES: got.append(name + ' errno ' + str(e.errno))",
              "tried('udp', lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)"
                  + ".sendto(b'leak', ('127.0.0.1', int(sys.argv[1]))))",
              "tried('unix', lambda: socket.socket(socket.AF_UNIX).connect(sys.argv[2]))",
              "tried('tcp6', lambda: socket.socket(socket.AF_INET6))",
              "tried('netlink', lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))",
              "params = ctypes.create_string_buffer(120)",
              "fd = libc.syscall(425, 4, params)",
              "if fd >= 0 or ctypes.get_errno() != errno.EACCES:",
              "    got.append('io_uring errno ' + str(ctypes.get_errno()))",
              "refused('shm', libc.shmget(0, 1 << 20, 0o1600))",
              "refused('sem', libc.semget(0, 1, 0o1600))",
              "refused('msg', libc.msgget(0, 0o1600))",
              "refused('mq', libc.mq_open(b'/sandboxd-test', os.O_CREAT | os.O_RDWR, 0o600, None))",
              "add_key = {'x86_64': 248, 'aarch64': 217}[platform.machine()]",
              "refused('key', libc.syscall(add_key, b'user', b'sandboxd-test', b'x', 1, -2))",
              "a, b = socket.socketpair()",
              "a.send(b'p')",
              "if b.recv(1) != b'p': got.append('no pair')");
      for (Optional<Path> parent : confinements()) {
        String where = where(parent);
        Ran ran =
            python(work, parent, script, Integer.toString(udp.getLocalPort()), unixPath.toString());
        assertEquals(new Ran(0, "\n"), ran, where + "what got through");
        java.net.DatagramPacket packet = new java.net.DatagramPacket(new byte[16], 16);
        org.junit.jupiter.api.Assertions.assertThrows(
            java.net.SocketTimeoutException.class, () -> udp.receive(packet), where + "UDP");
      }
    }
  }

  /**
   * Memory the tree's watch would not count (a memfd written but never mapped is in no process's
   * resident set; a secret memfd likewise) and the kernel interfaces a tool does not need:
   * userfaultfd, perf_event_open (the CPU's counters, a side channel on the node's other work) and
   * bpf. Each is refused with EACCES, which none of them answers on its own here: without the
   * filter the first four succeed (the counter of the tree's own CPU clock, its kernel and
   * hypervisor time excluded, as perf_event_paranoid 2 allows) and bpf says EINVAL. A file written
   * in the working directory still works. The Python script prints each one that got through.
   */
  @Test
  void aTreeMakesNoMemoryItsWatchCannotCountAndReachesNoKernelInterfaceItDoesNotNeed()
      throws Exception {
    assumeTrue(SeccompFilter.available(), "this kernel or machine takes no seccomp filter");
    assumeTrue(Files.isExecutable(Path.of("/usr/bin/python3")), "no python3 here");
    Path work = Files.createDirectories(state.resolve("work"));
    String script =
        probe(
            "nr = {'x86_64': (447, 323, 298, 321), 'aarch64': (447, 282, 241, 280)}",
            "secret, uffd, perf, bpf = nr[platform.machine()]",
            "try:",
            "    fd = os.memfd_create('held')",
            "    os.write(fd, b'x' * 65536)",
            "    got.append('memfd')",
            "except OSError as e:",
            "    if e.errno != errno.EACCES: got.append('memfd errno ' + str(e.errno))",
            "refused('memfd_secret', libc.syscall(secret, 0))",
            "refused('userfaultfd', libc.syscall(uffd, 1))",
            "attr = ctypes.create_string_buffer(128)",
            "ctypes.memmove(attr, (ctypes.c_uint32 * 2)(1, 128), 8)",
            "ctypes.memmove(ctypes.byref(attr, 40), (ctypes.c_uint64 * 1)(0x60), 8)",
            "refused('perf', libc.syscall(perf, attr, 0, -1, -1, 0))",
            "refused('bpf', libc.syscall(bpf, 0, ctypes.create_string_buffer(128), 128))",
            "with open('kept', 'w') as f: f.write('x')");
    for (Optional<Path> parent : confinements()) {
      Files.deleteIfExists(work.resolve("kept"));
      String where = where(parent);
      assertEquals(new Ran(0, "\n"), python(work, parent, script), where + "what got through");
      assertEquals("x", Files.readString(work.resolve("kept")), where + "the working directory");
    }
  }

  /**
   * What the daemon's capabilities would let a tree do past the node's bounds: raise its own memory
   * limit and priority, make a device node (the node's disks and memory) in its directory. The test
   * JVM runs as root here, as a daemon started by hand might: before the tree's thread dropped its
   * capabilities, every one of these worked. Under the PID namespace the tree is root of a user
   * namespace of its own, whose capabilities reach nothing of the node's.
   */
  @Test
  void aTreeHoldsNoCapabilityOfTheDaemon() throws Exception {
    assumeTrue(Files.isExecutable(Path.of("/usr/bin/python3")), "no python3 here");
    Path work = Files.createDirectories(state.resolve("work"));
    String script =
        String.join(
            "\n",
            "import os, resource, stat, sys",
            "got = []",
            "status = dict(l.split(':', 1) for l in open('/proc/self/status') if ':' in l)",
            "if int(status['CapAmb'], 16): got.append('ambient')",
            "if sys.argv[1] == 'cgroup' and int(status['CapPrm'], 16): got.append('permitted')",
            "soft, hard = resource.getrlimit(resource.RLIMIT_DATA)",
            "try:",
            "    resource.setrlimit(resource.RLIMIT_DATA, (soft, resource.RLIM_INFINITY))",
            "    got.append('raised its memory limit')",
            "except (ValueError, OSError): pass",
            "try:",
            "    os.setpriority(os.PRIO_PROCESS, 0, -5)",
            "    got.append('raised its priority')",
            "except OSError: pass",
            "try:",
            "    os.mknod('null', stat.S_IFCHR | 0o600, os.makedev(1, 3))",
            "    got.append('made a device node')",
            "except OSError: pass",
            "print(' '.join(got))");
    for (Optional<Path> parent : confinements()) {
      String where = where(parent);
      String mode = parent.isPresent() ? "cgroup" : "pidns";
      Ran ran = python(work, parent, script, mode);
      assertEquals(new Ran(0, "\n"), ran, where + "what the tree could do");
    }
  }

  /**
   * The ruleset alone refuses a device node beneath the writable directory, to a program that holds
   * the capability to make one (the test JVM's, as root): the second layer where the first, the
   * tree's empty capability sets, is missing.
   */
  @Test
  void theRulesetRefusesADeviceNodeEvenToAProgramThatMayMakeOne() throws Exception {
    assumeTrue(Landlock.abi() >= 1, "this kernel has no Landlock");
    assumeTrue(
        ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:uid")).intValue() == 0,
        "making a device node needs root's CAP_MKNOD");
    Path work = Files.createDirectories(state.resolve("work"));
    Landlock.Rules rules = new Landlock.Rules(Landlock.SYSTEM, List.of(), List.of(work), List.of());
    int[] exits = new int[2];
    Thread ruled =
        new Thread(
            () -> {
              try {
                Landlock.restrictThisThread(rules);
                for (int i = 0; i < 2; i++) {
                  String kind = i == 0 ? "c" : "b";
                  exits[i] =
                      new ProcessBuilder(
                              "/bin/mknod", work.resolve(kind).toString(), kind, "1", "3")
                          .redirectErrorStream(true)
                          .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                          .start()
                          .waitFor();
                }
              } catch (Exception e) {
                exits[0] = -1;
              }
            });
    ruled.start();
    ruled.join();
    assertEquals(1, exits[0], "a character device was made");
    assertEquals(1, exits[1], "a block device was made");
    assertFalse(Files.exists(work.resolve("c")));
  }
}
