package io.sandboxd.daemon.rpc;

import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * Answers a request that is not the protobuf message its method takes with INVALID_ARGUMENT naming
 * the message type, once and quietly. Left to gRPC, such a request is answered UNKNOWN and logged
 * at SEVERE with a stack trace, so any client could fill the daemon's journal at will.
 */
public final class RequestDecoder {
  private RequestDecoder() {}

  /** A request as decoded: the message, or why its bytes are not one. */
  private record Decoded<Q>(Q message, String fault) {}

  /** {@code service} with every method's request decoded as above. */
  public static ServerServiceDefinition wrap(ServerServiceDefinition service) {
    ServiceDescriptor original = service.getServiceDescriptor();
    List<ServerMethodDefinition<?, ?>> methods = new ArrayList<>();
    ServiceDescriptor.Builder descriptor =
        ServiceDescriptor.newBuilder(original.getName())
            .setSchemaDescriptor(original.getSchemaDescriptor());
    for (ServerMethodDefinition<?, ?> m : service.getMethods()) {
      ServerMethodDefinition<?, ?> wrapped = wrapMethod(m);
      methods.add(wrapped);
      descriptor.addMethod(wrapped.getMethodDescriptor());
    }
    ServerServiceDefinition.Builder out = ServerServiceDefinition.builder(descriptor.build());
    methods.forEach(out::addMethod);
    return out.build();
  }

  private static <Q, R> ServerMethodDefinition<Decoded<Q>, R> wrapMethod(
      ServerMethodDefinition<Q, R> definition) {
    MethodDescriptor<Q, R> method = definition.getMethodDescriptor();
    MethodDescriptor.Marshaller<Q> requests = method.getRequestMarshaller();
    String type = requestTypeName(method);
    MethodDescriptor.Marshaller<Decoded<Q>> decoding =
        new MethodDescriptor.Marshaller<>() {
          @Override
          public InputStream stream(Decoded<Q> value) {
            return requests.stream(value.message());
          }

          @Override
          public Decoded<Q> parse(InputStream stream) {
            byte[] bytes;
            try {
              // Bounded by the server's inbound message limit.
              bytes = stream.readAllBytes();
            } catch (java.io.IOException e) {
              return new Decoded<>(null, "request could not be read: " + e.getMessage());
            }
            try {
              return new Decoded<>(requests.parse(new java.io.ByteArrayInputStream(bytes)), null);
            } catch (RuntimeException e) {
              String why =
                  badString(method, bytes).orElse(Status.fromThrowable(e).getDescription());
              return new Decoded<>(null, "request is not a valid " + type + ": " + why);
            }
          }
        };
    MethodDescriptor<Decoded<Q>, R> wrapped =
        method.toBuilder(decoding, method.getResponseMarshaller()).build();
    ServerCallHandler<Q, R> handler = definition.getServerCallHandler();
    return ServerMethodDefinition.create(
        wrapped,
        (call, headers) -> {
          ServerCall.Listener<Q> inner = handler.startCall(new Unwrapped<>(call, method), headers);
          return new Refusing<Q, R>(call, inner);
        });
  }

  /**
   * The string field of the request whose bytes are not UTF-8 (protobuf's own error names none), as
   * {@code name} or {@code name[i]} for a repeated one.
   */
  private static java.util.Optional<String> badString(MethodDescriptor<?, ?> method, byte[] bytes) {
    if (!(method.getRequestMarshaller() instanceof MethodDescriptor.PrototypeMarshaller<?> p)
        || !(p.getMessagePrototype() instanceof com.google.protobuf.Message m)) {
      return java.util.Optional.empty();
    }
    com.google.protobuf.UnknownFieldSet fields;
    try {
      fields = com.google.protobuf.UnknownFieldSet.parseFrom(bytes);
    } catch (com.google.protobuf.InvalidProtocolBufferException e) {
      return java.util.Optional.empty();
    }
    for (com.google.protobuf.Descriptors.FieldDescriptor f : m.getDescriptorForType().getFields()) {
      if (f.getType() != com.google.protobuf.Descriptors.FieldDescriptor.Type.STRING
          || !fields.hasField(f.getNumber())) {
        continue;
      }
      List<com.google.protobuf.ByteString> values =
          fields.getField(f.getNumber()).getLengthDelimitedList();
      for (int i = 0; i < values.size(); i++) {
        if (!values.get(i).isValidUtf8()) {
          return java.util.Optional.of(
              (f.isRepeated() ? f.getName() + "[" + i + "]" : f.getName()) + ": not valid UTF-8");
        }
      }
    }
    return java.util.Optional.empty();
  }

  private static String requestTypeName(MethodDescriptor<?, ?> method) {
    if (method.getRequestMarshaller() instanceof MethodDescriptor.PrototypeMarshaller<?> p
        && p.getMessagePrototype() instanceof com.google.protobuf.Message m) {
      return m.getDescriptorForType().getFullName();
    }
    return method.getFullMethodName() + " request";
  }

  /** Passes decoded requests on; closes the call INVALID_ARGUMENT at the first undecodable one. */
  private static final class Refusing<Q, R> extends ServerCall.Listener<Decoded<Q>> {
    private final ServerCall<Decoded<Q>, R> call;
    private final ServerCall.Listener<Q> inner;
    private boolean refused;

    Refusing(ServerCall<Decoded<Q>, R> call, ServerCall.Listener<Q> inner) {
      this.call = call;
      this.inner = inner;
    }

    @Override
    public void onMessage(Decoded<Q> decoded) {
      if (refused) {
        return;
      }
      if (decoded.fault() != null) {
        refused = true;
        call.close(
            Status.INVALID_ARGUMENT.withDescription(BoundedDescription.of(decoded.fault())),
            new Metadata());
        return;
      }
      inner.onMessage(decoded.message());
    }

    @Override
    public void onHalfClose() {
      if (!refused) {
        inner.onHalfClose();
      }
    }

    @Override
    public void onCancel() {
      inner.onCancel();
    }

    @Override
    public void onComplete() {
      inner.onComplete();
    }

    @Override
    public void onReady() {
      inner.onReady();
    }
  }

  /**
   * The call as the service's own handler sees it: its original method descriptor, all else
   * forwarded. The cast is safe: no other method of a server call names the request type.
   */
  private static final class Unwrapped<Q, R>
      extends ForwardingServerCall.SimpleForwardingServerCall<Q, R> {
    private final MethodDescriptor<Q, R> method;

    @SuppressWarnings("unchecked")
    Unwrapped(ServerCall<?, R> call, MethodDescriptor<Q, R> method) {
      super((ServerCall<Q, R>) call);
      this.method = method;
    }

    @Override
    public MethodDescriptor<Q, R> getMethodDescriptor() {
      return method;
    }
  }
}
