package io.sandboxd.daemon;

import io.grpc.stub.StreamObserver;
import java.util.concurrent.CompletableFuture;

/**
 * The answer side of a streaming call that is answered once: the first reply completes {@link
 * #future()}; an error, or a call that ends with no reply, completes it exceptionally.
 */
public final class FirstReply<T> implements StreamObserver<T> {
  private final CompletableFuture<T> future = new CompletableFuture<>();

  /** The reply, once it comes. */
  public CompletableFuture<T> future() {
    return future;
  }

  @Override
  public void onNext(T reply) {
    future.complete(reply);
  }

  @Override
  public void onError(Throwable t) {
    future.completeExceptionally(t);
  }

  @Override
  public void onCompleted() {
    // A no-op once a reply came; otherwise the waiter learns the call ended empty.
    future.completeExceptionally(new IllegalStateException("the daemon answered nothing"));
  }
}
