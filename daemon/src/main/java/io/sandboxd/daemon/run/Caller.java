package io.sandboxd.daemon.run;

import io.grpc.Context;
import io.netty.channel.Channel;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.unix.PeerCredentials;
import io.sandboxd.daemon.rpc.CallerCredentials;
import java.io.IOException;

/**
 * Who is on the other end of a connection, as the kernel says (SO_PEERCRED at accept): uid, primary
 * gid and pid, each {@code -1} when the kernel could not say (the policy then matches no rule).
 */
public record Caller(long uid, long gid, long pid) {
  /** The caller of the gRPC call in progress, put there by {@link CallerCredentials}. */
  public static final Context.Key<Caller> CURRENT = Context.key("sandboxd.caller");

  /** A connection whose credentials could not be read. */
  public static final Caller UNKNOWN = new Caller(-1, -1, -1);

  /** Whether the kernel gave this caller's uid. */
  public boolean known() {
    return uid >= 0;
  }

  /** The caller of the current call, or {@link #UNKNOWN} outside one. */
  public static Caller current() {
    Caller c = CURRENT.get();
    return c == null ? UNKNOWN : c;
  }

  /** The peer credentials of a Unix socket connection; {@link #UNKNOWN} for any other channel. */
  public static Caller of(Channel channel) {
    if (channel instanceof EpollDomainSocketChannel uds) {
      try {
        PeerCredentials pc = uds.peerCredentials();
        int[] gids = pc.gids();
        return new Caller(
            Integer.toUnsignedLong(pc.uid()),
            gids.length > 0 ? Integer.toUnsignedLong(gids[0]) : -1,
            pc.pid());
      } catch (IOException | RuntimeException e) {
        return UNKNOWN;
      }
    }
    return UNKNOWN;
  }

  @Override
  public String toString() {
    return known() ? "uid " + uid + " (gid " + gid + ", pid " + pid + ")" : "an unknown caller";
  }
}
