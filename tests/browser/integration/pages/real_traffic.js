// The script of real_traffic.html (tests/integration/test_real_traffic.py): console, errors, network,
// storage, a worker, frames and, on demand, DOM mutations.
document.getElementById('host').attachShadow({mode: 'open'}).innerHTML = '<button>In shadow</button>';

console.log('hello', 42, {a: 1, nested: {b: [1, 2]}}, [1, 'two'], null, undefined, 10n, Symbol('s'));
console.info('info');
console.debug('debug');
console.warn('careful');
console.error('bad thing', new Error('logged error'));
console.table([{a: 1, b: 2}, {a: 3, b: 4}]);
console.dir(document.getElementById('title'));
console.dirxml(document.getElementById('title'));
console.group('group');
console.log('inside the group');
console.groupEnd();
console.count('counted');
console.time('timer');
console.timeEnd('timer');
console.trace('traced');
console.assert(false, 'assertion failed');
console.countReset('counted');
console.time('lap');
console.timeLog('lap', 'lapped');
console.clear();

document.cookie = 'flavour=oatmeal; SameSite=Lax';
document.cookie = 'insecure_none=1; SameSite=None';
localStorage.setItem('local', 'value');
sessionStorage.setItem('session', 'value');

fetch('real_traffic.json').then(r => r.json()).then(j => console.log('fetched', j.greeting));
fetch('real_traffic.json', {method: 'POST', body: JSON.stringify({posted: true}),
                            headers: {'Content-Type': 'application/json'}})
  .then(r => console.log('posted', r.status));
fetch('http://127.0.0.1:9/refused').catch(e => console.log('refused', e.name));
fetch('intercepted.txt').then(r => r.text()).then(t => console.log('intercepted', t));
const xhr = new XMLHttpRequest();
xhr.open('GET', 'real_traffic.json?xhr=1');
xhr.onload = () => console.log('xhr', xhr.status);
xhr.send();
try {
  const socket = new WebSocket('ws://127.0.0.1:9/socket');
  socket.onerror = () => console.log('websocket failed, as expected');
} catch (e) {
  console.log('no websocket', e);
}

// The test serves a websocket echo server and passes its port in the query string.
const wsPort = new URLSearchParams(location.search).get('ws');
if (wsPort) {
  const echo = new WebSocket('ws://127.0.0.1:' + wsPort + '/echo');
  let echoed = 0;
  echo.onopen = () => { echo.send('text frame'); echo.send(new Uint8Array([1, 2, 3])); };
  echo.onmessage = () => { if (++echoed === 2) { echo.close(1000, 'done'); } };
  echo.onclose = () => console.log('websocket closed');
}

navigator.serviceWorker.register('real_traffic_sw.js').then(() => console.log('service worker registered'));

const worker = new Worker('real_traffic_worker.js');
worker.onmessage = (e) => console.log('from worker', e.data);
worker.postMessage('ping');

const cross = new URL('real_traffic_frame.html', location.href);
cross.hostname = 'localhost';  // another site: an out-of-process iframe
document.getElementById('cross').src = cross.href;

setTimeout(() => { throw new Error('uncaught on purpose'); }, 0);
const rejected = Promise.reject(new Error('rejected on purpose'));
setTimeout(() => rejected.catch(() => console.log('handled late')), 50);  // exceptionRevoked
performance.mark('real-traffic');

// Called by the test after DOM.getDocument: every kind of DOM mutation event.
window.mutate = function () {
  const list = document.getElementById('list');
  for (let i = 0; i < 3; i++) {
    const li = document.createElement('li');
    li.textContent = 'item ' + i;
    list.appendChild(li);
  }
  list.firstElementChild.remove();
  const title = document.getElementById('title');
  title.setAttribute('data-mutated', 'yes');
  title.removeAttribute('data-kind');
  title.firstChild.data = 'Real traffic, mutated';
  document.getElementById('text').style.color = 'blue';
  const extra = document.createElement('div');
  extra.id = 'extra';
  document.body.appendChild(extra);
  extra.attachShadow({mode: 'open'}).innerHTML = '<span>late shadow</span>';
  const style = document.createElement('style');
  style.textContent = '#extra { border: 1px solid red; }';
  document.head.appendChild(style);
  history.pushState({}, '', '#pushed');
  return list.children.length;
};

// Called by the test once it tracks storage: IndexedDB and Cache Storage content.
window.store = async function () {
  const db = await new Promise((resolve, reject) => {
    const open = indexedDB.open('real-traffic-db', 1);
    open.onupgradeneeded = () => {
      const store = open.result.createObjectStore('store', {keyPath: 'id'});
      store.createIndex('by_name', 'name');
    };
    open.onsuccess = () => resolve(open.result);
    open.onerror = () => reject(open.error);
  });
  await new Promise((resolve) => {
    const tx = db.transaction('store', 'readwrite');
    tx.objectStore('store').put({id: 1, name: 'one', when: new Date(0), tags: ['a', 'b'], nested: {x: 1}});
    tx.objectStore('store').put({id: 2, name: 'two'});
    tx.oncomplete = resolve;
  });
  db.close();
  const cache = await caches.open('real-traffic-cache');
  await cache.put('cached.txt', new Response('cached body', {headers: {'X-Cached': 'yes'}}));
  return 'stored';
};

// Called by the test with WebAudio enabled: a context with a small graph.
window.audio = function () {
  const context = new AudioContext();
  const oscillator = context.createOscillator();
  const gain = context.createGain();
  oscillator.connect(gain).connect(context.destination);
  gain.gain.setValueAtTime(0, context.currentTime);
  oscillator.start();
  window.audioContext = context;
  return context.state;
};

// Called by the test with downloads allowed.
window.download = function () {
  const a = document.createElement('a');
  a.href = 'real_traffic.json';
  a.download = 'saved.json';
  document.body.appendChild(a);
  a.click();
  a.remove();
};
