/* The FMA peak of one core: 12 independent chains of AVX-512 (zmm) and AVX2 (ymm)
 * fused multiply-adds, best of 5. The reference for issue 20's "% of the measured
 * AVX-512 FMA peak" (BENCHMARKS.md, "GEMM kernels"). Plain C: rustc's code for the
 * same loop ran the AVX-512 chains below peak.
 *
 *     gcc -O3 -march=native -funroll-loops -o /tmp/fma_peak benchmarks/fma_peak.c
 *     /tmp/fma_peak
 */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(){
  long n=200000000;
  __m512 a[12]; __m512 b=_mm512_set1_ps(1.0000001f), c=_mm512_set1_ps(1e-7f);
  for(int i=0;i<12;i++) a[i]=_mm512_set1_ps(i);
  double best=1e9;
  for(int r=0;r<5;r++){double t=now();
  for(long i=0;i<n/10;i++){ for(int j=0;j<12;j++) a[j]=_mm512_fmadd_ps(a[j],b,c);}
  t=now()-t; if(t<best)best=t;}
  float s=0; for(int j=0;j<12;j++) s+=_mm512_reduce_add_ps(a[j]);
  printf("avx512 %.1f GFLOP/s (%f)\n", (double)n/10*12*16*2/best/1e9, s);
  __m256 x[12]; __m256 y=_mm256_set1_ps(1.0000001f), z=_mm256_set1_ps(1e-7f);
  for(int i=0;i<12;i++) x[i]=_mm256_set1_ps(i);
  best=1e9;
  for(int r=0;r<5;r++){double t=now();
  for(long i=0;i<n/10;i++){ for(int j=0;j<12;j++) x[j]=_mm256_fmadd_ps(x[j],y,z);}
  t=now()-t; if(t<best)best=t;}
  float q[8]; s=0; for(int j=0;j<12;j++){_mm256_storeu_ps(q,x[j]); for(int k=0;k<8;k++) s+=q[k];}
  printf("avx2 %.1f GFLOP/s (%f)\n", (double)n/10*12*8*2/best/1e9, s);
}
