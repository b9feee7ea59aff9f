/* spectrometer.h - what the two spectrometers (spectrometer.cu on the GPU
 * with cuFFT, spectrometer_fftw.c on the CPU with FFTW) share: the stream
 * (the loopback generator's payload read as complex int8 samples, re, im),
 * the chunk shape, the FFT length and the output format. */
#ifndef SPECTROMETER_H
#define SPECTROMETER_H

#define SPEC_PAYLOAD 1024                  /* bytes per packet: 512 samples */
#define SPEC_PACKETS 64                    /* packets per chunk */
#define SPEC_SAMPLES (SPEC_PAYLOAD / 2 * SPEC_PACKETS) /* per chunk */
#define SPEC_NFFT 4096                     /* channels */
#define SPEC_FFTS (SPEC_SAMPLES / SPEC_NFFT) /* FFTs per chunk */

/* The config both run, with chunk memory MEM ("gpu" or "host"); %lu is
 * the packets of the stream (SPEC_PACKETS_DEFAULT unless --packets). */
#define SPEC_YAML(MEM) \
	"interfaces:\n" \
	"  - backend: loopback\n" \
	"    loopback: { packets: %lu, flows: 1, packet_size: 1082, loss: 0.001,\n" \
	"                replay: true, replay_inline: true }\n" \
	"pipeline:\n" \
	"  device: cpu\n" \
	"  chunks: { payload_bytes: 1024, packets: 64, in_flight: 8, mem: " MEM " }\n"
#define SPEC_PACKETS_DEFAULT 200000ul

#endif
