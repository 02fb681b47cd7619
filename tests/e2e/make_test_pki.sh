#!/usr/bin/env bash
# Writes a test PKI into DIR with the openssl CLI (EC P-256 keys, so that handshakes are cheap):
#   ca.pem/ca.key             the CA servers and clients trust
#   server.pem/server.key     CN=localhost, SAN DNS:localhost, IP:127.0.0.1 (signed by ca)
#   server2.pem/server2.key   the same names, CN=localhost-renewed (a reload's new certificate)
#   client.pem/client.key     CN=client-a, SAN URI:spiffe://test/client-a, DNS:client-a.test
#   expired.pem/expired.key   CN=client-expired, valid only in January 2020 (signed by ca)
#   other_ca.pem/other_ca.key another CA; stranger.pem/stranger.key CN=stranger signed by it
# Usage: make_test_pki.sh DIR
set -euo pipefail
dir=$1
mkdir -p "$dir"
cd "$dir"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1.key" 2>/dev/null; }
ca() {  # ca NAME CN
  key "$1"
  openssl req -x509 -new -key "$1.key" -subj "/CN=$2" -days 30 -out "$1.pem" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
leaf() {  # leaf NAME CN SAN CA
  key "$1"
  openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
  printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\n' "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$4.pem" -CAkey "$4.key" -CAcreateserial -days 30 \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}
ca ca "arenarpc test CA"
ca other_ca "another CA"
leaf server localhost "DNS:localhost,IP:127.0.0.1" ca
leaf server2 localhost-renewed "DNS:localhost,IP:127.0.0.1" ca
leaf client client-a "URI:spiffe://test/client-a,DNS:client-a.test" ca
leaf stranger stranger "DNS:stranger.test" other_ca
# An expired certificate needs explicit dates: `openssl ca` takes them.
key expired
openssl req -new -key expired.key -subj "/CN=client-expired" -out expired.csr
cat > ca.cnf <<CNF
[ca]
default_ca = test_ca
[test_ca]
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = any
[any]
commonName = supplied
CNF
: > index.txt
echo 1000 > serial
openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in expired.csr -out expired.pem \
  -startdate 20200101000000Z -enddate 20200201000000Z -notext 2>/dev/null
