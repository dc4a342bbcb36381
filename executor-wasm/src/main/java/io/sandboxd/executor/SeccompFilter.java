package io.sandboxd.executor;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import io.sandboxd.enforcer.LibcCalls;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * The seccomp filter an exec'd tree runs under: no socket of any family, and no io_uring (whose
 * operations open and connect sockets without a system call the filter sees). Landlock keeps the
 * tree from TCP but not from UDP or from a unix socket named by path, so without this a unit
 * granted {@code python3} could send its data anywhere over UDP, or speak to any local service the
 * daemon's user may reach (the journal, the system bus). {@code socketpair} stays: it reaches
 * nothing outside the tree. Nor the kernel's objects that outlive the tree and are counted as no
 * process's memory: System V shared memory, semaphores and message queues, POSIX message queues,
 * keys (a segment filled, detached and left behind holds the node's memory after the exec has
 * ended). Nor memory the tree's watch cannot see: a memfd written and never mapped is in no
 * process's resident set, so the count of the tree's memory missed it, and one memfd could grow to
 * the disk's headroom (RLIMIT_FSIZE is the only bound on it). Nor the kernel's interfaces a tool
 * does not need and an attack on the kernel or on other workloads does: userfaultfd (pauses the
 * kernel at a fault of the caller's choosing), perf_event_open (the CPU's counters, a side channel
 * on what else runs on the node, as the energy counters the tree is kept from are) and bpf.
 * Applied, like the Landlock ruleset, to the one thread that starts the tree.
 */
final class SeccompFilter {
  private static final Logger LOG = Logger.getLogger(SeccompFilter.class.getName());

  private static final int PR_SET_NO_NEW_PRIVS = 38;
  private static final int PR_SET_SECCOMP = 22;
  private static final int SECCOMP_MODE_FILTER = 2;
  private static final int EACCES = 13;

  // Classic BPF, as seccomp reads it: load a word of struct seccomp_data, compare, return.
  private static final short LD_W_ABS = 0x20;
  private static final short JEQ_K = 0x15;
  private static final short JGE_K = 0x35;
  private static final short RET_K = 0x06;
  private static final int NR_OFFSET = 0;
  private static final int ARCH_OFFSET = 4;
  private static final int RET_ALLOW = 0x7fff0000;
  private static final int RET_EACCES = 0x00050000 | EACCES;

  /**
   * For each calling convention a process on this machine may use, the system calls denied: the
   * native one's, and the 32-bit one's where it is known (a 64-bit program can enter it, so it
   * needs the same denials; 32-bit ARM is not listed, so on aarch64 it is denied whole). Numbers
   * from the kernel's tables (asm/unistd_64.h, unistd_32.h, asm-generic/unistd.h).
   */
  record Convention(int auditArch, List<Integer> denied, int deniedFrom) {
    Convention {
      denied = List.copyOf(denied);
    }
  }

  private static List<Integer> calls(int[]... groups) {
    List<Integer> all = new java.util.ArrayList<>();
    for (int[] group : groups) {
      for (int nr : group) {
        all.add(nr);
      }
    }
    return all;
  }

  // io_uring_setup, _enter, _register: one number on every architecture.
  private static final int[] IO_URING = {425, 426, 427};

  static final Convention X86_64 =
      new Convention(
          0xC000003E,
          calls(
              new int[] {41}, // socket
              new int[] {29, 30, 31, 67, 64, 65, 66, 220, 68, 69, 70, 71}, // shm*, sem*, msg*
              new int[] {240, 241, 242, 243, 244, 245}, // mq_*
              new int[] {248, 249, 250}, // add_key, request_key, keyctl
              new int[] {319, 447}, // memfd_create, memfd_secret
              new int[] {323, 298, 321}, // userfaultfd, perf_event_open, bpf
              IO_URING),
          0x40000000); // x32's numbering of the same calls, denied whole
  static final Convention I386 =
      new Convention(
          0x40000003,
          calls(
              new int[] {102, 359}, // socketcall, socket
              new int[] {117, 393, 394, 395, 396, 397, 398, 399, 400, 401, 402, 420}, // ipc, ...
              new int[] {277, 278, 279, 280, 281, 282, 418, 419}, // mq_*
              new int[] {286, 287, 288}, // add_key, request_key, keyctl
              new int[] {356, 447}, // memfd_create, memfd_secret
              new int[] {374, 336, 357}, // userfaultfd, perf_event_open, bpf
              IO_URING),
          Integer.MAX_VALUE);
  static final Convention AARCH64 =
      new Convention(
          0xC00000B7,
          calls(
              new int[] {198}, // socket
              new int[] {
                186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 197
              }, // msg, sem, shm
              new int[] {180, 181, 182, 183, 184, 185}, // mq_*
              new int[] {217, 218, 219}, // add_key, request_key, keyctl
              new int[] {279, 447}, // memfd_create, memfd_secret
              new int[] {282, 241, 280}, // userfaultfd, perf_event_open, bpf
              IO_URING),
          Integer.MAX_VALUE);

  private static final Map<String, List<Convention>> BY_MACHINE =
      Map.of("amd64", List.of(X86_64, I386), "aarch64", List.of(AARCH64));

  /** The libc calls this needs. */
  interface Libc extends Library {
    int prctl(int option, long arg2, long arg3, long arg4, long arg5) throws LastErrorException;
  }

  private static final class Bound {
    static final Optional<Libc> C = LibcCalls.bind(Libc.class);
    static final Optional<List<Convention>> CONVENTIONS =
        Optional.ofNullable(BY_MACHINE.get(System.getProperty("os.arch", "")));
    static final boolean AVAILABLE = probe();
    // The same for every tree: made once.
    static final byte[] PROGRAM = CONVENTIONS.map(SeccompFilter::program).orElse(new byte[0]);

    private static boolean probe() {
      if (C.isEmpty() || CONVENTIONS.isEmpty()) {
        if (C.isPresent()) {
          LOG.warning(
              "exec: no seccomp filter for "
                  + System.getProperty("os.arch")
                  + ": exec'd programs may open UDP and unix sockets");
        }
        return false;
      }
      // Asking for the mode of a filter with a null program: EFAULT where filters exist.
      try {
        C.get().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, 0, 0, 0);
      } catch (LastErrorException e) {
        if (e.getErrorCode() == 14) {
          return true;
        }
        LOG.warning(
            "exec: no seccomp filters on this kernel (errno "
                + e.getErrorCode()
                + "): exec'd programs may open UDP and unix sockets");
      }
      return false;
    }
  }

  private SeccompFilter() {}

  /** Whether this kernel and machine take the filter. */
  static boolean available() {
    return Bound.AVAILABLE;
  }

  /**
   * Filters the calling thread and every process it starts from now on; like Landlock's ruleset, it
   * is never lifted, so the caller is a thread made for one tree. Nothing happens where filters are
   * not available.
   */
  static void restrictThisThread() throws IOException {
    if (!available()) {
      return;
    }
    byte[] program = Bound.PROGRAM;
    Memory filter = new Memory(program.length);
    filter.write(0, program, 0, program.length);
    Memory fprog = new Memory(16); // struct sock_fprog: unsigned short len, then the pointer
    fprog.clear();
    fprog.setShort(0, (short) (program.length / 8));
    fprog.setPointer(8, filter);
    Libc c = Bound.C.orElseThrow();
    try {
      c.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
      c.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, Pointer.nativeValue(fprog), 0, 0);
    } catch (LastErrorException e) {
      throw new IOException("seccomp: errno " + e.getErrorCode(), e);
    }
  }

  /**
   * The filter for {@code conventions}, as struct sock_filter entries: for each convention, a block
   * that denies its listed calls (and every number from its {@code deniedFrom}) and allows the
   * rest; a call in no known convention is denied.
   */
  static byte[] program(List<Convention> conventions) {
    // Each convention's block: the arch load and test, the number's load, the from-test, the
    // denials, the two returns; then the last return. Sized from the lists, so that a call added
    // to one never overflows a fixed buffer at class initialization (which would fail every exec).
    int instructions = 1;
    for (Convention cv : conventions) {
      instructions += blockLength(cv);
    }
    ByteBuffer out = ByteBuffer.allocate(8 * instructions).order(ByteOrder.nativeOrder());
    for (Convention cv : conventions) {
      put(out, LD_W_ABS, 0, 0, ARCH_OFFSET);
      // Not this convention: skip the block (its length less this jump) to the next.
      put(out, JEQ_K, 0, blockLength(cv) - 2, cv.auditArch());
      put(out, LD_W_ABS, 0, 0, NR_OFFSET);
      int toDeny = cv.denied().size() + 1; // from the from-test: past the denials and the allow
      put(out, JGE_K, toDeny, 0, cv.deniedFrom());
      for (int i = 0; i < cv.denied().size(); i++) {
        put(out, JEQ_K, cv.denied().size() - i, 0, cv.denied().get(i));
      }
      put(out, RET_K, 0, 0, RET_ALLOW);
      put(out, RET_K, 0, 0, RET_EACCES);
    }
    put(out, RET_K, 0, 0, RET_EACCES);
    return out.array();
  }

  private static int blockLength(Convention cv) {
    return 4 + cv.denied().size() + 2;
  }

  private static void put(ByteBuffer out, short code, int jt, int jf, int k) {
    if (jt > 255 || jf > 255) {
      throw new IllegalArgumentException("a jump past 255 instructions: too many calls denied");
    }
    out.putShort(code).put((byte) jt).put((byte) jf).putInt(k);
  }
}
