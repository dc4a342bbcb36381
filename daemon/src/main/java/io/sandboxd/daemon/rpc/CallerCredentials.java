package io.sandboxd.daemon.rpc;

import io.grpc.Attributes;
import io.grpc.ChannelLogger;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.netty.GrpcHttp2ConnectionHandler;
import io.grpc.netty.InternalProtocolNegotiationEvent;
import io.grpc.netty.InternalProtocolNegotiator;
import io.grpc.netty.InternalProtocolNegotiators;
import io.grpc.netty.ProtocolNegotiationEvent;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.util.AsciiString;
import io.sandboxd.daemon.run.Caller;

/**
 * Carries each connection's peer credentials into its calls: the server's (plaintext) protocol
 * negotiation reads SO_PEERCRED once per connection and adds it to the transport attributes, and
 * {@link #interceptor()} puts it in the call's {@link Context} as {@link Caller#CURRENT}.
 */
public final class CallerCredentials implements InternalProtocolNegotiator.ProtocolNegotiator {
  /** The connection's caller, in its transport attributes. */
  static final Attributes.Key<Caller> ATTRIBUTE = Attributes.Key.create("sandboxd.caller");

  /** The connection's number, unique in this process, in its transport attributes. */
  static final Attributes.Key<Long> CONNECTION = Attributes.Key.create("sandboxd.connection");

  private static final java.util.concurrent.atomic.AtomicLong CONNECTIONS =
      new java.util.concurrent.atomic.AtomicLong();

  private final InternalProtocolNegotiator.ProtocolNegotiator plaintext =
      InternalProtocolNegotiators.serverPlaintext();

  @Override
  public AsciiString scheme() {
    return plaintext.scheme();
  }

  @Override
  public ChannelHandler newHandler(GrpcHttp2ConnectionHandler grpcHandler) {
    return new Stamp(plaintext.newHandler(grpcHandler), grpcHandler.getNegotiationLogger());
  }

  @Override
  public void close() {
    plaintext.close();
  }

  /** Adds the caller to the negotiation's attributes, then hands over to plaintext negotiation. */
  private static final class Stamp extends InternalProtocolNegotiators.ProtocolNegotiationHandler {
    Stamp(ChannelHandler next, ChannelLogger log) {
      super(next, "peercred", log);
    }

    @Override
    protected void protocolNegotiationEventTriggered(ChannelHandlerContext ctx) {
      ProtocolNegotiationEvent pne = getProtocolNegotiationEvent();
      Attributes attrs =
          InternalProtocolNegotiationEvent.getAttributes(pne).toBuilder()
              .set(ATTRIBUTE, Caller.of(ctx.channel()))
              // So that calls can be told apart by connection (FairCalls' lanes).
              .set(CONNECTION, CONNECTIONS.incrementAndGet())
              .build();
      replaceProtocolNegotiationEvent(InternalProtocolNegotiationEvent.withAttributes(pne, attrs));
      fireProtocolNegotiationEvent(ctx);
    }
  }

  /** Puts the transport's caller into each call's context. */
  public static ServerInterceptor interceptor() {
    return new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(
          ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        Caller c = call.getAttributes().get(ATTRIBUTE);
        return Contexts.interceptCall(
            Context.current().withValue(Caller.CURRENT, c == null ? Caller.UNKNOWN : c),
            call,
            headers,
            next);
      }
    };
  }
}
