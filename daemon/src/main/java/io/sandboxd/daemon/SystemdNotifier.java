package io.sandboxd.daemon;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDomainDatagramChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.unix.DomainDatagramPacket;
import io.netty.channel.unix.DomainSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * Tells systemd how the daemon is doing (the sd_notify protocol): one datagram per message to the
 * Unix socket named by {@code $NOTIFY_SOCKET}. Outside systemd it does nothing.
 */
public final class SystemdNotifier {
  private static final Logger LOG = Logger.getLogger(SystemdNotifier.class.getName());
  private static final long SEND_TIMEOUT_MS = 5_000;

  private final Optional<String> socketPath;

  private SystemdNotifier(Optional<String> socketPath) {
    this.socketPath = socketPath;
  }

  /** The notifier for this process: {@code $NOTIFY_SOCKET}, or a no-op when it is unset. */
  public static SystemdNotifier fromEnvironment() {
    return of(System.getenv("NOTIFY_SOCKET"));
  }

  /** A notifier for a {@code NOTIFY_SOCKET} value; null or empty gives a no-op. */
  public static SystemdNotifier of(String notifySocket) {
    return new SystemdNotifier(socketPath(notifySocket));
  }

  /**
   * The socket address a {@code NOTIFY_SOCKET} value names: an absolute path as is, and an abstract
   * socket ({@code @name}) with its leading {@code @} turned into the NUL byte the kernel expects.
   * Other forms (systemd's {@code vsock:}) are not supported here and give empty.
   */
  static Optional<String> socketPath(String notifySocket) {
    if (notifySocket == null || notifySocket.isEmpty()) {
      return Optional.empty();
    }
    if (notifySocket.startsWith("@")) {
      return Optional.of('\0' + notifySocket.substring(1));
    }
    if (notifySocket.startsWith("/")) {
      return Optional.of(notifySocket);
    }
    LOG.warning("NOTIFY_SOCKET=" + notifySocket + " is not a Unix socket path; not notifying");
    return Optional.empty();
  }

  /** Whether messages go anywhere (the daemon runs under systemd with Type=notify). */
  public boolean enabled() {
    return socketPath.isPresent();
  }

  /** {@code READY=1} with a human-readable status line. */
  public boolean ready(String status) {
    return notify("READY=1\nSTATUS=" + status);
  }

  /** {@code STOPPING=1}: the daemon is shutting down. */
  public boolean stopping() {
    return notify("STOPPING=1");
  }

  /**
   * Sends one message of newline-separated assignments; returns whether it was sent. It never
   * throws: a lost notification is logged, and must not stop the daemon it reports on.
   */
  public boolean notify(String state) {
    if (socketPath.isEmpty()) {
      return false;
    }
    if (!Epoll.isAvailable()) {
      LOG.warning("sd_notify: epoll unavailable: " + Epoll.unavailabilityCause());
      return false;
    }
    // One short-lived loop per message: the daemon sends two in its lifetime, and the shutdown
    // hook must not depend on event loops the daemon is closing at the same moment.
    EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
    try {
      ChannelFuture registered =
          new Bootstrap()
              .group(group)
              .channel(EpollDomainDatagramChannel.class)
              // An unbound, unconnected datagram socket may still sendto(): let it write at once.
              .option(ChannelOption.DATAGRAM_CHANNEL_ACTIVE_ON_REGISTRATION, true)
              .handler(new ChannelInboundHandlerAdapter())
              .register();
      if (!registered.awaitUninterruptibly(SEND_TIMEOUT_MS) || !registered.isSuccess()) {
        return failed(registered);
      }
      Channel ch = registered.channel();
      try {
        ChannelFuture sent =
            ch.writeAndFlush(
                new DomainDatagramPacket(
                    Unpooled.wrappedBuffer(state.getBytes(StandardCharsets.UTF_8)),
                    new DomainSocketAddress(socketPath.get())));
        if (!sent.awaitUninterruptibly(SEND_TIMEOUT_MS) || !sent.isSuccess()) {
          return failed(sent);
        }
        return true;
      } finally {
        ch.close().awaitUninterruptibly(SEND_TIMEOUT_MS);
      }
    } finally {
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(SEND_TIMEOUT_MS);
    }
  }

  private boolean failed(ChannelFuture f) {
    String why = f.cause() == null ? "timed out" : f.cause().toString();
    LOG.warning("sd_notify to " + socketPath.get().replace('\0', '@') + " failed: " + why);
    return false;
  }
}
