package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.EpollDomainDatagramChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.unix.DomainDatagramPacket;
import io.netty.channel.unix.DomainSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Plays systemd's side: a real Unix datagram socket bound by the test receives the messages. */
class SystemdNotifierTest {
  @TempDir Path tmp;

  private EventLoopGroup group;
  private final BlockingQueue<String> received = new LinkedBlockingQueue<>();

  @BeforeEach
  void startGroup() {
    group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
  }

  @AfterEach
  void stopGroup() {
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
  }

  private Channel listen(String address) throws InterruptedException {
    return listen(group, address, received);
  }

  /**
   * Binds a datagram socket at {@code address}, as systemd's notify socket, that adds every
   * message's text to {@code received}.
   */
  static Channel listen(EventLoopGroup group, String address, BlockingQueue<String> received)
      throws InterruptedException {
    return new Bootstrap()
        .group(group)
        .channel(EpollDomainDatagramChannel.class)
        .handler(
            new SimpleChannelInboundHandler<DomainDatagramPacket>() {
              @Override
              protected void channelRead0(ChannelHandlerContext ctx, DomainDatagramPacket p) {
                received.add(p.content().toString(StandardCharsets.UTF_8));
              }
            })
        .bind(new DomainSocketAddress(address))
        .sync()
        .channel();
  }

  private String next() throws InterruptedException {
    String m = received.poll(10, TimeUnit.SECONDS);
    assertNotNull(m, "no datagram arrived");
    return m;
  }

  @Test
  void readyAndStoppingReachAFilesystemSocket() throws Exception {
    Path sock = tmp.resolve("notify.sock");
    Channel server = listen(sock.toString());
    try {
      SystemdNotifier n = SystemdNotifier.of(sock.toString());
      assertTrue(n.enabled());
      assertTrue(n.ready("serving on /run/sandboxd/sandboxd.sock"));
      assertEquals("READY=1\nSTATUS=serving on /run/sandboxd/sandboxd.sock", next());
      assertTrue(n.stopping());
      assertEquals("STOPPING=1", next());
    } finally {
      server.close().sync();
    }
  }

  @Test
  void atSignNamesAnAbstractSocket() throws Exception {
    String name =
        "sandboxd-test-" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong());
    Channel server = listen("\0" + name);
    try {
      assertTrue(SystemdNotifier.of("@" + name).ready("abstract"));
      assertEquals("READY=1\nSTATUS=abstract", next());
    } finally {
      server.close().sync();
    }
  }

  @Test
  void socketPathMapsTheForms() {
    assertEquals(Optional.of("\0x/y"), SystemdNotifier.socketPath("@x/y"));
    assertEquals(
        Optional.of("/run/systemd/notify"), SystemdNotifier.socketPath("/run/systemd/notify"));
    assertEquals(Optional.empty(), SystemdNotifier.socketPath(null));
    assertEquals(Optional.empty(), SystemdNotifier.socketPath(""));
    assertEquals(Optional.empty(), SystemdNotifier.socketPath("vsock:2:1234"));
  }

  @Test
  void unsetNotifySocketIsANoOp() {
    SystemdNotifier n = SystemdNotifier.of(null);
    assertFalse(n.enabled());
    assertFalse(n.ready("x"));
    assertFalse(n.stopping());
  }

  @Test
  void nobodyListeningIsReportedNotThrown() {
    SystemdNotifier n = SystemdNotifier.of(tmp.resolve("absent.sock").toString());
    assertTrue(n.enabled());
    assertFalse(n.ready("nobody hears this"));
  }
}
