package io.sandboxd.daemon;

import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.unix.DomainSocketAddress;
import io.sandboxd.daemon.rpc.SandboxdGrpc;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** A gRPC client of the daemon over its Unix socket. */
public final class DaemonClient implements AutoCloseable {
  private final EventLoopGroup group;
  private final ManagedChannel channel;

  // gRPC asks every transport for SO_KEEPALIVE, which Unix sockets do not have; Netty warns on
  // each connection. Nothing is wrong, so keep the client's output clean. Held in a field because
  // java.util.logging keeps loggers weakly and would forget the level.
  private static final java.util.logging.Logger NETTY_BOOTSTRAP =
      java.util.logging.Logger.getLogger("io.netty.bootstrap");

  static {
    quietNettyBootstrap();
  }

  /** Silences Netty's per-connection SO_KEEPALIVE warning (client and server side alike). */
  static void quietNettyBootstrap() {
    NETTY_BOOTSTRAP.setLevel(java.util.logging.Level.SEVERE);
  }

  public DaemonClient(Path socket) {
    this.group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
    this.channel =
        NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
            .channelType(EpollDomainSocketChannel.class)
            .eventLoopGroup(group)
            .usePlaintext()
            .maxInboundMessageSize(64 << 20)
            .build();
  }

  /** The channel, for the other services on the socket (health, reflection). */
  public io.grpc.Channel channel() {
    return channel;
  }

  public SandboxdGrpc.SandboxdBlockingStub stub() {
    return SandboxdGrpc.newBlockingStub(channel);
  }

  /** The JCP service (standing grants and amendments) on the same socket. */
  public io.sandboxd.daemon.rpc.JcpGrpc.JcpBlockingStub jcp() {
    return io.sandboxd.daemon.rpc.JcpGrpc.newBlockingStub(channel);
  }

  @Override
  public void close() {
    channel.shutdownNow();
    try {
      channel.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
  }
}
