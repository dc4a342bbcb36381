package io.sandboxd.daemon;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A second process for {@link SocketLockTest}: takes the lock, says "held", then keeps it until its
 * stdin closes or it is killed (the kernel drops the lock with the process).
 */
final class SocketLockHolder {
  private SocketLockHolder() {}

  public static void main(String[] args) throws IOException {
    SocketLock lock = SocketLock.acquire(Path.of(args[0]));
    System.out.println("held");
    System.out.flush();
    while (System.in.read() >= 0) {
      // wait for EOF
    }
    lock.close();
  }
}
