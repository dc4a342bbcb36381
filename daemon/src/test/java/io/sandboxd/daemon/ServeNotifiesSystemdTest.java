package io.sandboxd.daemon;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code sandboxd serve} in a child JVM, as systemd starts it (Type=notify): READY=1 once the
 * socket exists, STOPPING=1 on SIGTERM.
 */
class ServeNotifiesSystemdTest {
  @TempDir Path tmp;

  @Test
  void serveSendsReadyThenStoppingOnSigterm() throws Exception {
    BlockingQueue<String> received = new LinkedBlockingQueue<>();
    EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
    Path notify = tmp.resolve("notify.sock");
    Path socket = tmp.resolve("sandboxd.sock");
    Process daemon = null;
    try {
      Channel server =
          new Bootstrap()
              .group(group)
              .channel(EpollDomainDatagramChannel.class)
              .handler(
                  new SimpleChannelInboundHandler<DomainDatagramPacket>() {
                    @Override
                    protected void channelRead0(ChannelHandlerContext ctx, DomainDatagramPacket p) {
                      received.add(p.content().toString(StandardCharsets.UTF_8));
                    }
                  })
              .bind(new DomainSocketAddress(notify.toString()))
              .sync()
              .channel();
      String java = ProcessHandle.current().info().command().orElse("java");
      ProcessBuilder pb =
          new ProcessBuilder(
              List.of(
                  java,
                  "-Djna.tmpdir=" + tmp.resolve("jna"),
                  "-cp",
                  System.getProperty("java.class.path"),
                  SandboxdMain.class.getName(),
                  "serve",
                  "--state",
                  tmp.resolve("state").toString(),
                  "--socket",
                  socket.toString()));
      pb.environment().put("NOTIFY_SOCKET", notify.toString());
      pb.redirectErrorStream(true).redirectOutput(tmp.resolve("daemon.log").toFile());
      daemon = pb.start();

      String ready = received.poll(60, TimeUnit.SECONDS);
      assertNotNull(
          ready, "no READY=1; daemon log:\n" + Files.readString(tmp.resolve("daemon.log")));
      assertEquals("READY=1\nSTATUS=serving on " + socket, ready);
      assertTrue(Files.exists(socket), "READY=1 only after the socket is bound");

      daemon.destroy(); // SIGTERM, as systemctl stop sends
      assertEquals("STOPPING=1", received.poll(30, TimeUnit.SECONDS));
      assertTrue(daemon.waitFor(30, TimeUnit.SECONDS));
      server.close().sync();
    } finally {
      if (daemon != null) {
        daemon.destroyForcibly();
      }
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }
  }
}
