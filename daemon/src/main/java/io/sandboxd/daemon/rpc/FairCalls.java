package io.sandboxd.daemon.rpc;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallExecutorSupplier;
import io.sandboxd.daemon.run.Caller;
import io.sandboxd.executor.UnitThread;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The threads that run the daemon's call handlers: at most {@code threads}, shared round-robin
 * between connections, each connection holding at most {@code perConnection} of them and each peer
 * (a uid, as SO_PEERCRED says, or the connection when the kernel gave none) at most {@code
 * perPeer}. A connection that floods the daemon with calls queues behind its own share; a call of
 * another connection waits for at most one free thread, never behind the flood.
 *
 * <p>Before this, gRPC's default executor started a thread for every call in progress, without
 * bound, in arrival order.
 */
public final class FairCalls implements ServerCallExecutorSupplier, AutoCloseable {
  private static final Logger LOG = Logger.getLogger(FairCalls.class.getName());

  /** How long an idle handler thread is kept before it ends. */
  static final long IDLE_MS = 30_000;

  private final int threads;
  private final int perConnection;
  private final int perPeer;

  private final Object lock = new Object();
  // Lanes with queued work, in the order they are served: a lane goes back to the tail after
  // each task it starts, so lanes take turns.
  private final ArrayDeque<Lane> ready = new ArrayDeque<>();
  private final Map<Object, Lane> lanes = new HashMap<>();
  private final Map<Object, Peer> peers = new HashMap<>();
  // Unit threads: a handler runs its call's unit in place (the executor's pool would cost a
  // thread hand-off there and back for every run).
  private final ThreadFactory handlers = UnitThread.factory("sandboxd-call-");
  private int workers;
  private int idle;
  private int signalled;
  private int running;
  private int busiest;
  private boolean closed;

  /** The threads of one peer in use, and its lanes. */
  private static final class Peer {
    final Object key;
    int running;
    final Set<Lane> lanes = new LinkedHashSet<>();

    Peer(Object key) {
      this.key = key;
    }
  }

  /** One connection's queued tasks. */
  private static final class Lane {
    final Object key;
    final Peer peer;
    final ArrayDeque<Runnable> queue = new ArrayDeque<>();
    int running;
    boolean inReady;

    Lane(Object key, Peer peer) {
      this.key = key;
      this.peer = peer;
    }
  }

  FairCalls(int threads, int perConnection, int perPeer) {
    if (threads < 1 || perConnection < 1 || perPeer < 1) {
      throw new IllegalArgumentException("threads, perConnection, perPeer: each at least 1");
    }
    this.threads = threads;
    this.perConnection = Math.min(perConnection, threads);
    this.perPeer = Math.min(perPeer, threads);
  }

  /**
   * The node's handler threads for {@code maxConcurrentUnits}: enough for every unit slot to have
   * an attached submission waiting and as many calls again besides; half of them for any one
   * connection, all but an eighth for any one uid (so another uid always finds a thread).
   */
  public static FairCalls forNode(int maxConcurrentUnits) {
    int threads = Math.min(1024, Math.max(64, 4 * maxConcurrentUnits + 32));
    return new FairCalls(threads, threads / 2, threads - Math.max(2, threads / 8));
  }

  int threads() {
    return threads;
  }

  int perConnection() {
    return perConnection;
  }

  int perPeer() {
    return perPeer;
  }

  /** The most tasks that ran at once so far. */
  int busiest() {
    synchronized (lock) {
      return busiest;
    }
  }

  /** Handler threads now alive. */
  int workers() {
    synchronized (lock) {
      return workers;
    }
  }

  /** Connections with tasks queued or running now. */
  int lanes() {
    synchronized (lock) {
      return lanes.size();
    }
  }

  @Override
  public <Q, R> Executor getExecutor(ServerCall<Q, R> call, Metadata metadata) {
    Object connection = call.getAttributes().get(CallerCredentials.CONNECTION);
    Caller caller = call.getAttributes().get(CallerCredentials.ATTRIBUTE);
    if (connection == null) {
      // Not from our transport (in-process tests): one lane for all such calls.
      connection = "unattributed";
    }
    Object peer = caller != null && caller.known() ? "uid " + caller.uid() : connection;
    return lane(connection, peer);
  }

  /** The executor of connection {@code connection}, whose peer is {@code peer}. */
  Executor lane(Object connection, Object peer) {
    return task -> submit(connection, peer, task);
  }

  private void submit(Object connection, Object peerKey, Runnable task) {
    synchronized (lock) {
      if (closed) {
        throw new java.util.concurrent.RejectedExecutionException("the daemon is stopping");
      }
      Lane lane = lanes.get(connection);
      if (lane == null) {
        Peer peer = peers.computeIfAbsent(peerKey, Peer::new);
        lane = new Lane(connection, peer);
        lanes.put(connection, lane);
        peer.lanes.add(lane);
      }
      lane.queue.add(task);
      offer(lane);
      wake();
    }
  }

  // Holding lock: puts a lane with queued work and room in its shares at the tail of the ready
  // lanes.
  private void offer(Lane lane) {
    if (!lane.inReady && !lane.queue.isEmpty() && eligible(lane)) {
      ready.add(lane);
      lane.inReady = true;
    }
  }

  private boolean eligible(Lane lane) {
    return lane.running < perConnection && lane.peer.running < perPeer;
  }

  // Holding lock: gets a thread to the ready lanes, an idle one if there is one not yet woken.
  private void wake() {
    if (ready.isEmpty()) {
      return;
    }
    if (idle > signalled) {
      signalled++;
      lock.notify();
    } else if (idle == 0 && workers < threads) {
      // Idle threads already woken take the work first; a thread that starts a task wakes the
      // next, so a burst of calls does not start a thread per call up to the bound.
      workers++;
      handlers.newThread(this::work).start();
    }
  }

  private void work() {
    while (true) {
      Lane lane;
      Runnable task;
      synchronized (lock) {
        lane = next();
        if (lane == null) {
          workers--;
          return;
        }
        task = lane.queue.poll();
        lane.running++;
        lane.peer.running++;
        running++;
        busiest = Math.max(busiest, running);
        offer(lane);
        wake();
      }
      try {
        task.run();
      } catch (RuntimeException | Error e) {
        LOG.log(Level.WARNING, "a call handler failed", e);
      }
      synchronized (lock) {
        lane.running--;
        lane.peer.running--;
        running--;
        // The peer's other lanes may have waited for its share: each gets its turn again.
        for (Lane l : lane.peer.lanes) {
          offer(l);
        }
        if (lane.queue.isEmpty() && lane.running == 0) {
          lanes.remove(lane.key);
          lane.peer.lanes.remove(lane);
          if (lane.peer.lanes.isEmpty()) {
            peers.remove(lane.peer.key);
          }
        }
      }
    }
  }

  // Holding lock: the next ready lane with room in its shares, waiting for one up to IDLE_MS;
  // null when none came (or the executor closed) and this thread should end.
  private Lane next() {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(IDLE_MS);
    while (true) {
      while (!ready.isEmpty()) {
        Lane l = ready.poll();
        l.inReady = false;
        if (!l.queue.isEmpty() && eligible(l)) {
          return l;
        }
        // Over a share: it comes back when one of its peer's tasks ends.
      }
      long left = deadline - System.nanoTime();
      if (closed || left <= 0) {
        return null;
      }
      idle++;
      try {
        TimeUnit.NANOSECONDS.timedWait(lock, left);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        idle--;
        return null;
      }
      idle--;
      if (signalled > 0) {
        signalled--;
      }
    }
  }

  @Override
  public void close() {
    synchronized (lock) {
      closed = true;
      lock.notifyAll();
    }
  }
}
