package org.lancehost;

import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.LongFunction;
import java.util.function.LongUnaryOperator;

/**
 * A C handle shared by threads: calls hold the read lock, so {@link #close()} waits for calls in
 * flight and a call after close fails with {@link LanceException.InvalidArgument} instead of
 * touching freed memory.
 */
final class Handle implements AutoCloseable {
  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  private final String what;
  private final java.util.function.LongConsumer free;
  private long ptr;

  Handle(long ptr, String what, java.util.function.LongConsumer free) {
    this.ptr = ptr;
    this.what = what;
    this.free = free;
  }

  <T> T with(LongFunction<T> f) {
    lock.readLock().lock();
    try {
      if (ptr == 0) throw new LanceException.InvalidArgument("the " + what + " is closed");
      return f.apply(ptr);
    } finally {
      lock.readLock().unlock();
    }
  }

  long withLong(LongUnaryOperator f) {
    lock.readLock().lock();
    try {
      if (ptr == 0) throw new LanceException.InvalidArgument("the " + what + " is closed");
      return f.applyAsLong(ptr);
    } finally {
      lock.readLock().unlock();
    }
  }

  boolean isClosed() {
    lock.readLock().lock();
    try {
      return ptr == 0;
    } finally {
      lock.readLock().unlock();
    }
  }

  /** Frees the C object once every call in progress on it has returned. Idempotent. */
  @Override
  public void close() {
    long p;
    lock.writeLock().lock();
    try {
      p = ptr;
      ptr = 0;
    } finally {
      lock.writeLock().unlock();
    }
    if (p != 0) free.accept(p);
  }
}
