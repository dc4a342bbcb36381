package io.sandboxd.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.stub.StreamObserver;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * The answers to {@code calls} asynchronous calls made at once, one observer for all of them: what
 * each reply says ({@code kept}), or its error, and how many calls are answered so far.
 */
final class Answers<T> implements StreamObserver<T> {
  final Queue<String> kept = new ConcurrentLinkedQueue<>();
  final Queue<Throwable> errors = new ConcurrentLinkedQueue<>();
  private final AtomicInteger answered = new AtomicInteger();
  private final CountDownLatch done;
  private final int calls;
  private final Function<T, String> keep;

  Answers(int calls, Function<T, String> keep) {
    this.calls = calls;
    this.done = new CountDownLatch(calls);
    this.keep = keep;
  }

  @Override
  public void onNext(T reply) {
    kept.add(keep.apply(reply));
  }

  @Override
  public void onError(Throwable t) {
    errors.add(t);
    answered.incrementAndGet();
    done.countDown();
  }

  @Override
  public void onCompleted() {
    answered.incrementAndGet();
    done.countDown();
  }

  /** The calls answered so far, by a reply or an error. */
  int answered() {
    return answered.get();
  }

  /** Waits up to {@code seconds} for every call: each must have been answered with a reply. */
  void assertAllReplied(long seconds) throws InterruptedException {
    assertTrue(done.await(seconds, TimeUnit.SECONDS), done.getCount() + " unanswered");
    assertTrue(errors.isEmpty(), errors.size() + " refused, e.g. " + errors.peek());
    assertEquals(calls, kept.size());
  }
}
