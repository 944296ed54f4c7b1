package org.lancehost;

/**
 * The I/O statistics of one stream (a scan, a split search, an aggregate, a merge: the sum of
 * its inputs'), as the library counts them ({@code LanceIoStats} of {@code lance_host.h}). Read
 * with {@link ArrowStream#ioStats()}; final once the stream has ended, growing while it runs.
 * Requests and bytes count reads sent to an object store ({@code s3://}, {@code gs://}, ...): a
 * local table reports none. Immutable, thread-safe.
 *
 * @param readRequests read requests sent to storage
 * @param readBytes bytes those requests returned
 * @param indexReadRequests the part of {@code readRequests} that read index files
 * @param indexReadBytes the part of {@code readBytes} that came from index files
 * @param indexCacheHits index-cache lookups of the stream's plan that hit
 * @param indexCacheMisses index-cache lookups that missed and read storage
 * @param dataCacheHits data-cache blocks the stream's reads found cached
 * @param dataCacheMisses data-cache blocks fetched from storage
 * @param dataCacheHitBytes bytes served from the data cache
 */
public record IoStats(long readRequests, long readBytes, long indexReadRequests, long indexReadBytes,
    long indexCacheHits, long indexCacheMisses, long dataCacheHits, long dataCacheMisses, long dataCacheHitBytes) {

  /** No I/O (what a closed stream reports). */
  public static final IoStats NONE = new IoStats(0, 0, 0, 0, 0, 0, 0, 0, 0);

  /** The field-by-field sum (statistics of several streams). */
  public IoStats plus(IoStats o) {
    return new IoStats(readRequests + o.readRequests, readBytes + o.readBytes, indexReadRequests + o.indexReadRequests,
        indexReadBytes + o.indexReadBytes, indexCacheHits + o.indexCacheHits, indexCacheMisses + o.indexCacheMisses,
        dataCacheHits + o.dataCacheHits, dataCacheMisses + o.dataCacheMisses, dataCacheHitBytes + o.dataCacheHitBytes);
  }
}
