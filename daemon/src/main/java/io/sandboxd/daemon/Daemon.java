package io.sandboxd.daemon;

import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.sandboxd.daemon.store.RunStore;
import io.sandboxd.enforcer.DeviceClass;
import io.sandboxd.executor.EnergyModel;
import io.sandboxd.executor.Executor;
import io.sandboxd.executor.HostServices;
import io.sandboxd.executor.KvStore;
import io.sandboxd.executor.SecretStore;
import io.sandboxd.executor.UnitCompiler;
import io.sandboxd.metering.Attribution;
import io.sandboxd.metering.DiscoveredMeters;
import io.sandboxd.metering.EnergyClass;
import io.sandboxd.metering.MeterDiscovery;
import io.sandboxd.metering.MeteringConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * The daemon process, wired explicitly: identity, store, executor, admission, supervisor and the
 * gRPC server on a Unix socket guarded by a lock file.
 */
public final class Daemon implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(Daemon.class.getName());

  /** What the embedded default configuration sets. */
  public record Settings(
      int maxConcurrentUnits, long cpuMilliwattsEstimate, long maxWallMillis, int maxInboundBytes) {
    public static Settings defaults() {
      return new Settings(
          Math.max(2, Runtime.getRuntime().availableProcessors()), 15_000, 600_000, 64 << 20);
    }
  }

  private final DaemonPaths paths;
  private final SocketLock lock;
  private final RunStore store;
  private final Executor executor;
  private final Server server;
  private final EventLoopGroup boss;
  private final EventLoopGroup workers;
  private final NodeIdentity node;
  private final DiscoveredMeters meters;
  private final Attribution attribution;
  private final KvStore kv;

  private Daemon(
      DaemonPaths paths,
      SocketLock lock,
      RunStore store,
      Executor executor,
      Server server,
      EventLoopGroup boss,
      EventLoopGroup workers,
      NodeIdentity node,
      DiscoveredMeters meters,
      Attribution attribution,
      KvStore kv) {
    this.meters = meters;
    this.attribution = attribution;
    this.kv = kv;
    this.paths = paths;
    this.lock = lock;
    this.store = store;
    this.executor = executor;
    this.server = server;
    this.boss = boss;
    this.workers = workers;
    this.node = node;
  }

  public static Daemon start(DaemonPaths paths, Settings settings) throws IOException {
    createPrivateDir(paths.stateDir());
    Path socketDir = paths.socket().getParent();
    if (!Files.isDirectory(socketDir)) {
      createPrivateDir(socketDir);
    }
    SocketLock lock = SocketLock.acquire(paths.socket());
    RunStore store = null;
    Executor executor = null;
    DiscoveredMeters meters = null;
    Attribution attribution = null;
    KvStore kv = null;
    try {
      NodeIdentity node = NodeIdentity.load(paths.stateDir(), paths.keyFile());
      store = RunStore.open(paths.storeFile());
      Map<String, String> bad = store.verifyAll(Optional.empty());
      LOG.info(
          "run store "
              + paths.storeFile()
              + ": "
              + store.count()
              + " runs, "
              + (bad.isEmpty() ? "all chains verify" : bad.size() + " FAIL verification"));
      bad.forEach((run, why) -> LOG.severe("run " + run + " does not verify: " + why));
      meters = MeterDiscovery.discover(MeteringConfig.defaults());
      LOG.info("energy meters: " + meters.summaryLine());
      attribution = Attribution.start(meters, MeteringConfig.defaults());
      Set<DeviceClass> meterable = EnumSet.noneOf(DeviceClass.class);
      for (EnergyClass c : meters.meterableClasses()) {
        meterable.add(DeviceClass.valueOf(c.name()));
      }
      kv = KvStore.open(paths.stateDir().resolve("kv.db"));
      HostServices services =
          HostServices.none()
              .withKv(kv)
              .withSecrets(SecretStore.directory(HostServices.defaultSecretsDir(paths.stateDir())));
      executor =
          new Executor(
              settings.maxConcurrentUnits(),
              EnergyModel.attributed(attribution),
              settings.maxWallMillis(),
              services);
      Admission admission = new Admission(new UnitCompiler(256), meterable);
      RunSupervisor supervisor =
          new RunSupervisor(admission, executor, store, node, paths.stateDir().resolve("storage"));
      EventLoopGroup boss = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
      EventLoopGroup workers = new MultiThreadIoEventLoopGroup(2, EpollIoHandler.newFactory());
      Server server =
          NettyServerBuilder.forAddress(new DomainSocketAddress(paths.socket().toString()))
              .channelType(EpollServerDomainSocketChannel.class)
              .bossEventLoopGroup(boss)
              .workerEventLoopGroup(workers)
              .maxInboundMessageSize(settings.maxInboundBytes())
              .addService(new SandboxdService(supervisor, store))
              .build()
              .start();
      // Bound under the process umask: set the mode explicitly (owner and group only).
      Files.setPosixFilePermissions(paths.socket(), PosixFilePermissions.fromString("rw-rw----"));
      LOG.info(
          "sandboxd serving on "
              + paths.socket()
              + " as host "
              + node.host().id()
              + " key "
              + node.host().publicKey());
      return new Daemon(
          paths, lock, store, executor, server, boss, workers, node, meters, attribution, kv);
    } catch (IOException | RuntimeException e) {
      if (executor != null) {
        executor.close();
      }
      if (attribution != null) {
        attribution.close();
      }
      if (meters != null) {
        meters.close();
      }
      closeQuietly(kv);
      if (store != null) {
        store.close();
      }
      lock.close();
      throw e;
    }
  }

  private static void closeQuietly(KvStore kv) {
    if (kv == null) {
      return;
    }
    try {
      kv.close();
    } catch (java.sql.SQLException e) {
      LOG.warning("kv store: close failed: " + e.getMessage());
    }
  }

  private static void createPrivateDir(Path dir) throws IOException {
    if (!Files.isDirectory(dir)) {
      Files.createDirectories(
          dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    }
  }

  public DaemonPaths paths() {
    return paths;
  }

  public NodeIdentity node() {
    return node;
  }

  public void awaitTermination() throws InterruptedException {
    server.awaitTermination();
  }

  @Override
  public void close() throws IOException {
    server.shutdown();
    try {
      if (!server.awaitTermination(10, TimeUnit.SECONDS)) {
        server.shutdownNow();
      }
    } catch (InterruptedException e) {
      server.shutdownNow();
      Thread.currentThread().interrupt();
    }
    boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    executor.close();
    attribution.close();
    meters.close();
    closeQuietly(kv);
    store.close();
    Files.deleteIfExists(paths.socket());
    lock.close();
  }
}
