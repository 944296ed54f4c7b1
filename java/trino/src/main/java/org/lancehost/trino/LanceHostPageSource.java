package org.lancehost.trino;

import io.trino.spi.Page;
import io.trino.spi.block.Block;
import io.trino.spi.connector.ConnectorPageSource;
import io.trino.spi.connector.SourcePage;
import io.trino.spi.connector.ColumnHandle;
import io.trino.spi.connector.DynamicFilter;
import io.trino.spi.predicate.TupleDomain;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.lancehost.AggregateSpec;
import org.lancehost.ArrowStream;
import org.lancehost.Dataset;
import org.lancehost.IoStats;
import org.lancehost.ScanOptions;
import org.lancehost.TextQuery;
import org.lancehost.VectorQuery;

/**
 * One split read as Trino pages: the library's Arrow stream of the split (the table handle's
 * filter and limit pushed into it), each batch converted value by value (TypeMapping). A query
 * that needs no column (count(*)) counts the split's matching rows instead of reading any.
 *
 * <p>Dynamic filters: when Trino hands the split a join's dynamic filter that is still being
 * collected, the source waits for it (up to {@code lance-host.dynamic-filter-wait-ms}, through
 * {@link #isBlocked()}) before it starts the scan, and pushes what translates of it
 * (FilterTranslator) into the scan with the handle's filter; an empty build side reads nothing.
 * Trino still applies the whole dynamic filter itself, so a filter that is incomplete or that
 * does not translate only costs rows read.
 */
final class LanceHostPageSource implements ConnectorPageSource {
  private final Dataset dataset;
  private final List<LanceHostColumnHandle> columns;
  private ArrowStream stream; // null when no column is read
  private long remainingCount; // rows still to hand out when no column is read
  private boolean finished;
  private long completedBytes;
  private long completedPositions;

  private final byte[] split;
  private final String filter;
  private final long limit;
  private final String orderBy;
  private final BufferAllocator allocator;
  private final DynamicFilter dynamicFilter;
  private final long waitUntilNanos;
  private boolean started;
  private String appliedDynamicFilter;

  LanceHostPageSource(Dataset dataset, byte[] split, List<LanceHostColumnHandle> columns, String filter, long limit,
      String orderBy, BufferAllocator allocator, DynamicFilter dynamicFilter, long dynamicFilterWaitMillis) {
    this.orderBy = orderBy;
    this.dataset = dataset;
    this.columns = columns;
    this.split = split;
    this.filter = filter;
    this.limit = limit;
    this.allocator = allocator;
    this.dynamicFilter = dynamicFilter;
    this.waitUntilNanos = System.nanoTime() + dynamicFilterWaitMillis * 1_000_000L;
  }

  /** A source of one stream the library computes over the whole version (an aggregate, a search). */
  private LanceHostPageSource(Dataset dataset, List<LanceHostColumnHandle> columns, BufferAllocator allocator,
      java.util.function.Function<Dataset, ArrowStream> open) {
    this.dataset = dataset;
    this.columns = columns;
    this.split = null;
    this.filter = null;
    this.limit = -1;
    this.orderBy = null;
    this.allocator = allocator;
    this.dynamicFilter = DynamicFilter.EMPTY;
    this.waitUntilNanos = 0;
    this.started = true;
    try {
      this.stream = open.apply(dataset);
    } catch (RuntimeException e) {
      dataset.close();
      throw e;
    }
  }

  /** The final aggregates of the whole version (`spec`), as pages of the output columns. */
  static LanceHostPageSource aggregate(Dataset dataset, List<LanceHostColumnHandle> columns, AggregateSpec spec,
      BufferAllocator allocator) {
    return new LanceHostPageSource(dataset, columns, allocator, d -> d.aggregate(spec, allocator));
  }

  /** The top k of a vector or full-text search over the whole version. */
  static LanceHostPageSource search(Dataset dataset, List<LanceHostColumnHandle> columns, LanceHostSearch search,
      BufferAllocator allocator) {
    return new LanceHostPageSource(dataset, columns, allocator, d -> {
      List<String> names = new ArrayList<>();
      for (LanceHostColumnHandle c : columns) {
        if (!c.name().equals("_distance") && !c.name().equals("_score")) names.add(c.name());
      }
      List<ArrowStream> parts = new ArrayList<>();
      try {
        if (search.text() != null) {
          TextQuery q = TextQuery.of(search.column(), search.text(), search.k()).columns(names)
              .match(search.match()).slop(search.slop());
          if (search.filter() != null) q = q.prefilter(search.filter());
          byte[] statistics = d.textStatistics(q);
          for (byte[] split : d.planTextSearch(search.column(), 0).splits()) {
            parts.add(d.searchText(split, q, statistics, allocator));
          }
          return Dataset.mergeText(parts, search.k(), 0, allocator);
        }
        VectorQuery q = VectorQuery.of(search.column(), search.query(), search.k()).columns(names);
        if (search.filter() != null) q = q.prefilter(search.filter());
        for (byte[] split : d.planVectorSearch(search.column(), VectorQuery.METRIC_DEFAULT, true, 0).splits()) {
          parts.add(d.search(split, q, allocator));
        }
        return Dataset.mergeTopK(parts, search.k(), 0, allocator);
      } catch (RuntimeException e) {
        for (ArrowStream s : parts) s.close();
        throw e;
      }
    });
  }

  /** The dynamic filter a join's build side is still collecting, while it is worth waiting. */
  private boolean waitingForDynamicFilter() {
    return !started && dynamicFilter.isAwaitable() && !dynamicFilter.isComplete() && System.nanoTime() < waitUntilNanos;
  }

  @Override
  public CompletableFuture<?> isBlocked() {
    if (!waitingForDynamicFilter()) return NOT_BLOCKED;
    long left = Math.max(1, (waitUntilNanos - System.nanoTime()) / 1_000_000L);
    CompletableFuture<?> timeout = CompletableFuture.runAsync(() -> {},
        CompletableFuture.delayedExecutor(left, TimeUnit.MILLISECONDS));
    return CompletableFuture.anyOf(dynamicFilter.isBlocked(), timeout);
  }

  /** Starts the split's stream (or count) with the handle's filter and what the join's dynamic
   *  filter knows by now, both pushed into the scan. */
  private void start() {
    started = true;
    TupleDomain<ColumnHandle> dynamic = dynamicFilter.getCurrentPredicate();
    if (dynamic.isNone()) {
      // the build side is empty: no row of this split can join
      appliedDynamicFilter = "false";
      stream = null;
      remainingCount = 0;
      return;
    }
    String sql = filter;
    FilterTranslator.Result r = FilterTranslator.translate(dynamic);
    if (r.sql() != null) {
      appliedDynamicFilter = r.sql();
      sql = sql == null ? r.sql() : "(" + sql + ") AND (" + r.sql() + ")";
    }
    if (columns.isEmpty()) {
      long n = dataset.countRows(split, sql);
      remainingCount = limit >= 0 ? Math.min(n, limit) : n;
      stream = null;
    } else {
      List<String> names = new ArrayList<>();
      for (LanceHostColumnHandle c : columns) names.add(c.name());
      ScanOptions o = ScanOptions.all().columns(names);
      if (sql != null) o = o.filter(sql);
      if (orderBy != null) o = o.orderBy(orderBy);
      if (limit >= 0) o = o.limit(limit);
      stream = dataset.scan(split, o, allocator);
    }
  }

  /** The part of the join's dynamic filter this split's scan applied (null = none). */
  String appliedDynamicFilter() {
    return appliedDynamicFilter;
  }

  @Override
  public long getCompletedBytes() {
    return completedBytes;
  }

  @Override
  public long getReadTimeNanos() {
    return stream == null ? 0 : stream.nanosInNext();
  }

  @Override
  public boolean isFinished() {
    return finished;
  }

  @Override
  public SourcePage getNextSourcePage() {
    if (finished) return null;
    if (!started) {
      if (waitingForDynamicFilter()) return null; // isBlocked tells Trino when to come back
      start();
    }
    if (stream == null) {
      int n = (int) Math.min(remainingCount, 1 << 20);
      remainingCount -= n;
      if (remainingCount == 0) finished = true;
      completedPositions += n;
      return n == 0 ? null : SourcePage.create(n);
    }
    try (VectorSchemaRoot batch = stream.next()) {
      if (batch == null) {
        finished = true;
        IoStats io = stream.ioStats();
        if (io != null) completedBytes = io.readBytes();
        return null;
      }
      int n = batch.getRowCount();
      Block[] blocks = new Block[columns.size()];
      for (int i = 0; i < blocks.length; i++) {
        LanceHostColumnHandle c = columns.get(i);
        FieldVector v = batch.getVector(c.name());
        if (v == null) {
          throw new IllegalStateException("the scan returned no column '" + c.name() + "'");
        }
        blocks[i] = TypeMapping.block(c.type(), v, n);
      }
      completedPositions += n;
      return SourcePage.create(new Page(n, blocks));
    }
  }

  @Override
  public java.util.OptionalLong getCompletedPositions() {
    return java.util.OptionalLong.of(completedPositions);
  }

  @Override
  public void close() {
    finished = true;
    try {
      if (stream != null) stream.close();
    } finally {
      dataset.close();
    }
  }
}
