package io.sandboxd.executor;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Receipt;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The run's traffic off the node: egress and ingress bytes and the inference calls with the energy
 * they drew, counted for the receipt's {@code net} and {@code inference}.
 */
final class RunNetwork {
  private final DeviceClass inferenceClass;
  private final AtomicLong egressBytes = new AtomicLong();
  private final AtomicLong ingressBytes = new AtomicLong();
  private final AtomicLong inferenceCalls = new AtomicLong();
  private final AtomicLong inferenceUj = new AtomicLong();

  RunNetwork(DeviceClass inferenceClass) {
    this.inferenceClass = inferenceClass;
  }

  void countEgress(long bytes) {
    egressBytes.addAndGet(bytes);
  }

  void countIngress(long bytes) {
    ingressBytes.addAndGet(bytes);
  }

  void countInference() {
    inferenceCalls.incrementAndGet();
  }

  void countInferenceUj(long uj) {
    inferenceUj.addAndGet(uj);
  }

  /** This run's part of the receipt's {@code net}. */
  Receipt.NetUse use() {
    return new Receipt.NetUse(egressBytes.get(), ingressBytes.get());
  }

  ExecutionResult.Inference inference() {
    return new ExecutionResult.Inference(inferenceCalls.get(), inferenceClass, inferenceUj.get());
  }
}
