package io.sandboxd.daemon;

import io.sandboxd.daemon.rpc.JcpGrpc;
import io.sandboxd.daemon.rpc.SandboxdGrpc;
import io.sandboxd.daemon.rpc.SandboxdOuterClass;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Loads and initializes the serving path's classes (gRPC, protobuf, Netty's epoll transport) on a
 * second core while the main thread opens and checks the run store: about a quarter of a second of
 * class loading that otherwise follows the store check before the socket serves (issue 22, start-up
 * to SERVING).
 *
 * <p>It only loads: nothing is bound or served, and any failure here is left for the main thread to
 * meet with its own message. The main thread {@link #await}s it before it builds the server, so the
 * two threads never initialize the same library's classes at once (class initialization across
 * threads can deadlock on a cycle of static initializers).
 */
final class ServingPreload {
  private static final Logger LOG = Logger.getLogger(ServingPreload.class.getName());

  /**
   * The server's own classes, named because the daemon reaches them only through the builder (a
   * name here that no longer resolves stops the preload early: ServingPreloadTest checks each).
   */
  static final java.util.List<String> CLASSES =
      java.util.List.of(
          "io.grpc.netty.NettyServerBuilder",
          "io.grpc.netty.NettyServer",
          "io.grpc.netty.NettyServerHandler",
          "io.grpc.internal.ServerImpl",
          "io.grpc.protobuf.services.ProtoReflectionServiceV1",
          "io.grpc.protobuf.services.HealthStatusManager",
          "io.netty.channel.epoll.EpollServerDomainSocketChannel",
          "io.netty.handler.codec.http2.DefaultHttp2ConnectionEncoder");

  private final Thread thread;

  private ServingPreload(Thread thread) {
    this.thread = thread;
  }

  /** Starts loading on a daemon thread of its own. */
  static ServingPreload start() {
    Thread t = new Thread(ServingPreload::load, "sandboxd-preload");
    t.setDaemon(true);
    t.start();
    return new ServingPreload(t);
  }

  /** Waits for the loading to end (it never blocks on anything but class loading). */
  void await() {
    boolean interrupted = false;
    while (true) {
      try {
        thread.join();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private static void load() {
    try {
      // The native transport (its library is unpacked and loaded once).
      io.netty.channel.epoll.Epoll.ensureAvailability();
      // The allocator's class, not a buffer: a buffer would give this short-lived thread a cache.
      Class.forName(
          "io.netty.buffer.ByteBufAllocator", true, ServingPreload.class.getClassLoader());
      // Every method's descriptor and marshaller: each message class and its default instance.
      SandboxdGrpc.getServiceDescriptor();
      JcpGrpc.getServiceDescriptor();
      // The file descriptor the reflection service answers from.
      SandboxdOuterClass.getDescriptor();
      for (String name : CLASSES) {
        Class.forName(name, true, ServingPreload.class.getClassLoader());
      }
    } catch (Throwable t) { // NOPMD: a preload only warms; the real start reports any fault
      LOG.log(Level.FINE, "serving preload stopped early", t);
    }
  }
}
