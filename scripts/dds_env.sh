# Sourced by bin/unilab (with ROOT set): the DDS environment of every process UniLab starts.
# Fast DDS's shared-memory transport creates /dev/shm/fastdds_* segments with mode 0644
# whatever the umask and leaves them behind when a process is killed (docs/dds.md), so by
# default DDS goes over UDP on loopback (config/fastdds_private.xml): nothing of it under
# /dev/shm, and discovery stays on this machine. A user who chose a discovery range or a
# Fast DDS profile keeps it; UNILAB_DDS_PRIVATE=0 restores Fast DDS's own transports.
if [ "${UNILAB_DDS_PRIVATE:-1}" != 0 ] && [ -z "${ROS_AUTOMATIC_DISCOVERY_RANGE:-}" ] \
    && [ -z "${FASTDDS_DEFAULT_PROFILES_FILE:-}" ]; then
  # SYSTEM_DEFAULT: with LOCALHOST rmw_fastrtps would put shared memory back; the
  # profile's loopback allowlist keeps the traffic on this machine instead.
  export ROS_AUTOMATIC_DISCOVERY_RANGE=SYSTEM_DEFAULT
  export FASTDDS_DEFAULT_PROFILES_FILE="$ROOT/config/fastdds_private.xml"
fi
# Discovery stays on this machine unless the user says otherwise.
export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"
