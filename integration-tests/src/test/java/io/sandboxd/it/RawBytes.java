package io.sandboxd.it;

import io.grpc.MethodDescriptor;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;

/** A gRPC marshaller that sends and receives bytes as they are: the fuzz tests' frames. */
final class RawBytes implements MethodDescriptor.Marshaller<byte[]> {
  @Override
  public InputStream stream(byte[] value) {
    return new ByteArrayInputStream(value);
  }

  @Override
  public byte[] parse(InputStream stream) {
    try {
      return stream.readAllBytes();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
