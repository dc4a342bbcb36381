package io.sandboxd.daemon;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import com.google.protobuf.WireFormat;
import io.grpc.BindableService;
import io.grpc.MethodDescriptor;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.HashMap;
import java.util.Map;

/**
 * A service whose requests protobuf refuses to parse are answered INVALID_ARGUMENT naming the field
 * at fault (gRPC's own answer would be INTERNAL): chiefly a string field, such as an argument of
 * {@code SubmitRequest.args}, that is not valid UTF-8.
 */
final class StrictRequests {
  private StrictRequests() {}

  /** {@code service} with every request marshaller made strict. */
  static ServerServiceDefinition of(BindableService service) {
    ServerServiceDefinition def = service.bindService();
    ServerServiceDefinition.Builder b =
        ServerServiceDefinition.builder(def.getServiceDescriptor().getName());
    for (ServerMethodDefinition<?, ?> m : def.getMethods()) {
      b.addMethod(strict(m));
    }
    return b.build();
  }

  private static <Q, R> ServerMethodDefinition<Q, R> strict(ServerMethodDefinition<Q, R> m) {
    MethodDescriptor<Q, R> d = m.getMethodDescriptor();
    return ServerMethodDefinition.create(
        d.toBuilder().setRequestMarshaller(new Marshaller<>(d.getRequestMarshaller())).build(),
        m.getServerCallHandler());
  }

  private static final class Marshaller<T> implements MethodDescriptor.Marshaller<T> {
    private final MethodDescriptor.Marshaller<T> inner;

    Marshaller(MethodDescriptor.Marshaller<T> inner) {
      this.inner = inner;
    }

    @Override
    public InputStream stream(T value) {
      return inner.stream(value);
    }

    @Override
    public T parse(InputStream stream) {
      // The size was bounded by the server's inbound limit before this is reached.
      byte[] bytes;
      try {
        bytes = stream.readAllBytes();
      } catch (IOException e) {
        throw Status.INTERNAL.withDescription("reading a request: " + e).asRuntimeException();
      }
      try {
        return inner.parse(new ByteArrayInputStream(bytes));
      } catch (RuntimeException e) {
        throw Status.INVALID_ARGUMENT.withDescription(why(bytes)).withCause(e).asRuntimeException();
      }
    }

    /** The first string field that is not UTF-8, named with its index when it repeats. */
    private String why(byte[] bytes) {
      if (!(inner instanceof MethodDescriptor.PrototypeMarshaller<T> p)
          || !(p.getMessagePrototype() instanceof Message proto)) {
        return "the request is not a valid protobuf message";
      }
      var type = proto.getDescriptorForType();
      Map<Integer, Integer> seen = new HashMap<>();
      try {
        CodedInputStream in = CodedInputStream.newInstance(bytes);
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
          int number = WireFormat.getTagFieldNumber(tag);
          FieldDescriptor f = type.findFieldByNumber(number);
          if (f != null
              && f.getType() == FieldDescriptor.Type.STRING
              && WireFormat.getTagWireType(tag) == WireFormat.WIRETYPE_LENGTH_DELIMITED) {
            int index = seen.merge(number, 1, Integer::sum) - 1;
            if (!in.readBytes().isValidUtf8()) {
              return f.getName() + (f.isRepeated() ? "[" + index + "]" : "") + ": not valid UTF-8";
            }
          } else if (!in.skipField(tag)) {
            break;
          }
        }
      } catch (IOException | RuntimeException e) {
        return "the request is not a valid " + type.getName() + ": " + e.getMessage();
      }
      return "the request is not a valid " + type.getName();
    }
  }
}
