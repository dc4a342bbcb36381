package io.sandboxd.daemon.rpc;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.sandboxd.executor.ExecLineage;
import java.io.IOException;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Logger;

/**
 * Admission of socket connections, on the listening channel before gRPC sees them: at most {@code
 * maxTotal} open connections and {@code maxPerPeer} per peer uid (SO_PEERCRED); a connection past
 * either bound is closed at once, so idle clients cannot take the daemon's file descriptors. A peer
 * that a unit's exec started is refused whatever its uid: it runs as the daemon's own user.
 */
@ChannelHandler.Sharable
public final class ConnectionLimits extends ChannelInboundHandlerAdapter {
  private static final Logger LOG = Logger.getLogger(ConnectionLimits.class.getName());

  /** Descriptors kept for the daemon's own work (store, kv, key, units' files, exec pipes). */
  public static final long RESERVED_FDS = 256;

  /** Refusals are logged at most this often, so a flood cannot flood the log. */
  private static final long LOG_INTERVAL_NANOS = 10_000_000_000L;

  private final int maxTotal;
  private final int maxPerPeer;
  private final AtomicInteger open = new AtomicInteger();
  private final Map<Integer, AtomicInteger> perPeer = new ConcurrentHashMap<>();
  private final AtomicLong refused = new AtomicLong();
  private final AtomicLong lastLogNanos = new AtomicLong(System.nanoTime() - LOG_INTERVAL_NANOS);

  public ConnectionLimits(int maxTotal, int maxPerPeer) {
    this.maxTotal = maxTotal;
    this.maxPerPeer = maxPerPeer;
  }

  /**
   * The configured total, lowered where the process's descriptor limit would not leave {@link
   * #RESERVED_FDS} for the daemon's own work.
   */
  public static int effectiveTotal(int configured, long maxFds) {
    if (maxFds <= 0) {
      return configured;
    }
    long room = Math.max(1, maxFds - RESERVED_FDS);
    return (int) Math.min(configured, room);
  }

  /** The process's descriptor limit (RLIMIT_NOFILE), or -1 when the JVM cannot say. */
  public static long processMaxFds() {
    if (java.lang.management.ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.UnixOperatingSystemMXBean unix) {
      return unix.getMaxFileDescriptorCount();
    }
    return -1;
  }

  int open() {
    return open.get();
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (!(msg instanceof Channel child)) {
      ctx.fireChannelRead(msg);
      return;
    }
    OptionalInt uid = peerUid(child);
    long pid = peerPid(child);
    if (pid > 0 && ExecLineage.startedByExec(pid)) {
      // Such a program runs as the daemon's own user, whom the node policy admits unrestricted.
      refuse(child, "pid " + pid + " is a program a unit's exec started");
      return;
    }
    if (open.incrementAndGet() > maxTotal) {
      open.decrementAndGet();
      refuse(child, "the daemon's " + maxTotal + " connections are in use");
      return;
    }
    AtomicInteger mine =
        uid.isPresent() ? perPeer.computeIfAbsent(uid.getAsInt(), u -> new AtomicInteger()) : null;
    if (mine != null && mine.incrementAndGet() > maxPerPeer) {
      mine.decrementAndGet();
      open.decrementAndGet();
      refuse(child, "uid " + uid.getAsInt() + " holds " + maxPerPeer + " connections");
      return;
    }
    child
        .closeFuture()
        .addListener(
            f -> {
              open.decrementAndGet();
              if (mine != null) {
                mine.decrementAndGet();
              }
            });
    ctx.fireChannelRead(child);
  }

  private static OptionalInt peerUid(Channel child) {
    if (child instanceof EpollDomainSocketChannel uds) {
      try {
        return OptionalInt.of(uds.peerCredentials().uid());
      } catch (IOException | RuntimeException e) {
        // No credentials: the connection still counts against the total.
        return OptionalInt.empty();
      }
    }
    return OptionalInt.empty();
  }

  /** The peer's pid at connect (SO_PEERCRED), or 0 when the kernel gave none. */
  private static long peerPid(Channel child) {
    if (child instanceof EpollDomainSocketChannel uds) {
      try {
        return uds.peerCredentials().pid();
      } catch (IOException | RuntimeException e) {
        return 0;
      }
    }
    return 0;
  }

  private void refuse(Channel child, String why) {
    // Not yet registered with an event loop: closing the descriptor is all there is to do.
    child.unsafe().closeForcibly();
    long n = refused.incrementAndGet();
    long now = System.nanoTime();
    long last = lastLogNanos.get();
    if (now - last >= LOG_INTERVAL_NANOS && lastLogNanos.compareAndSet(last, now)) {
      LOG.warning("connection refused: " + why + " (" + n + " refused so far)");
    }
  }
}
