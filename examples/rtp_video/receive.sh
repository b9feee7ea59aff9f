#!/bin/sh
# receive.sh [OUT.h5] [FRAMES] - GStreamer sends FRAMES (default 90) frames
# of 640x480 UYVY test video as RFC 4175 RTP to 127.0.0.1:5004; `vfgx run`
# receives them as one chunk a frame and records every chunk to OUT.h5.
set -e
here=$(dirname "$0")
out=${1:-frames.h5}
frames=${2:-90}
vfgx=${VFGX:-vfgx}
"$vfgx" run --record "$out" "$here/rtp_video.yaml" &
pid=$!
sleep 1 # the socket bound before the first packet
gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern=ball \
	! video/x-raw,format=UYVY,width=640,height=480,framerate=30/1 \
	! rtpvrawpay ssrc=0x1234abcd ! udpsink host=127.0.0.1 port=5004
wait "$pid"
