package io.sandboxd.daemon;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import com.google.protobuf.UnknownFieldSet;
import com.google.protobuf.WireFormat;
import io.grpc.BindableService;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCallHandler;
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

  /**
   * Where a request that could not be parsed carries why, from the marshaller to the handler (gRPC
   * answers UNKNOWN for anything a marshaller throws): the largest field number, used by no
   * message.
   */
  static final int REFUSAL_FIELD = 536_870_911;

  private static <Q, R> ServerMethodDefinition<Q, R> strict(ServerMethodDefinition<Q, R> m) {
    MethodDescriptor<Q, R> d = m.getMethodDescriptor();
    ServerCallHandler<Q, R> inner = m.getServerCallHandler();
    ServerCallHandler<Q, R> handler =
        (call, headers) ->
            new ForwardingServerCallListener.SimpleForwardingServerCallListener<Q>(
                inner.startCall(call, headers)) {
              private boolean refused;

              @Override
              public void onMessage(Q message) {
                String why = refusal(message);
                if (why != null) {
                  refused = true;
                  call.close(Status.INVALID_ARGUMENT.withDescription(why), new Metadata());
                  return;
                }
                super.onMessage(message);
              }

              @Override
              public void onHalfClose() {
                if (!refused) {
                  super.onHalfClose();
                }
              }
            };
    return ServerMethodDefinition.create(
        d.toBuilder().setRequestMarshaller(new Marshaller<>(d.getRequestMarshaller())).build(),
        handler);
  }

  /** Why the marshaller could not parse {@code message}, or null for a parsed one. */
  private static String refusal(Object message) {
    if (message instanceof Message m && m.getUnknownFields().hasField(REFUSAL_FIELD)) {
      var values = m.getUnknownFields().getField(REFUSAL_FIELD).getLengthDelimitedList();
      return values.isEmpty() ? "the request could not be parsed" : values.get(0).toStringUtf8();
    }
    return null;
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
        if (!(inner instanceof MethodDescriptor.PrototypeMarshaller<T> p)
            || !(p.getMessagePrototype() instanceof Message proto)) {
          throw e;
        }
        // An empty request of the method's type that carries why, for the handler to answer.
        @SuppressWarnings("unchecked")
        T refused =
            (T)
                proto.toBuilder()
                    .setUnknownFields(
                        UnknownFieldSet.newBuilder()
                            .addField(
                                REFUSAL_FIELD,
                                UnknownFieldSet.Field.newBuilder()
                                    .addLengthDelimited(ByteString.copyFromUtf8(why(bytes)))
                                    .build())
                            .build())
                    .build();
        return refused;
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
