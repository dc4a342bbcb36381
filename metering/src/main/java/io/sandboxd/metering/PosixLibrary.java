package io.sandboxd.metering;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;

/** The three libc calls the MSR meter needs, bound through JNA (LP64 Linux: size_t is 64-bit). */
interface PosixLibrary extends Library {
  PosixLibrary C = Native.load("c", PosixLibrary.class);

  int O_RDONLY = 0;

  /** {@code int open(const char *pathname, int flags);} */
  int open(String pathname, int flags) throws LastErrorException;

  /** {@code ssize_t pread(int fd, void *buf, size_t count, off_t offset);} */
  long pread(int fd, Pointer buf, long count, long offset) throws LastErrorException;

  /** {@code int close(int fd);} */
  int close(int fd) throws LastErrorException;
}
