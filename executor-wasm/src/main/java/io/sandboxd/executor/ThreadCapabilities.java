package io.sandboxd.executor;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Memory;
import io.sandboxd.enforcer.LibcCalls;
import java.io.IOException;
import java.util.Optional;

/**
 * Empties the calling thread's capability sets, so that nothing it starts holds one: the shipped
 * unit gives the daemon CAP_SYS_RAWIO as an ambient capability (for the MSR meters), which every
 * exec'd program would inherit, and a daemon run as root would hand its trees every capability
 * (raising their own resource limits past the node's bounds, making device nodes, setting the
 * clock). With no_new_privs set, as the Landlock ruleset and the seccomp filter require, no program
 * the tree runs gains one back, not even as root or from file capabilities.
 */
final class ThreadCapabilities {
  private static final int VERSION_3 = 0x20080522; // _LINUX_CAPABILITY_VERSION_3
  private static final int PR_SET_NO_NEW_PRIVS = 38;

  /** The libc calls this needs. */
  interface Libc extends Library {
    int capset(Memory header, Memory data) throws LastErrorException;

    int prctl(int option, long arg2, long arg3, long arg4, long arg5) throws LastErrorException;
  }

  private static final class Bound {
    static final Optional<Libc> C = LibcCalls.bind(Libc.class);
  }

  private ThreadCapabilities() {}

  /**
   * Clears the effective, permitted, inheritable and (with them) ambient sets of the calling thread
   * for good, and sets no_new_privs on it; the caller is a thread made for one tree. Throws where
   * the kernel refuses: a tree that might hold the daemon's capabilities is never started.
   */
  static void clearThisThread() throws IOException {
    if (Bound.C.isEmpty()) {
      return; // not Linux: no capabilities to hold
    }
    Memory header = new Memory(8); // struct __user_cap_header_struct: version, pid (0: this one)
    header.setInt(0, VERSION_3);
    header.setInt(4, 0);
    Memory data = new Memory(24); // two struct __user_cap_data_struct, all sets empty
    data.clear();
    try {
      Bound.C.get().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
      Bound.C.get().capset(header, data);
    } catch (LastErrorException e) {
      throw new IOException("capset: errno " + e.getErrorCode(), e);
    }
  }
}
