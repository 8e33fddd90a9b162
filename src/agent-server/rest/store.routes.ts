// The long-term store, as the langgraph SDK's `client.store` calls it: writes and deletes answer 204,
// a missing item reads as null.
import { Router } from 'express';
import * as store from '../services/store/store.service.js';
import { presentStoreItem, sendJson } from './presenters.js';

export function storeRouter(): Router {
  const router = Router();

  router.put('/store/items', async (req, res) => {
    await store.putItem(req.agent, req.body);
    res.status(204).end();
  });

  router.get('/store/items', async (req, res) => {
    const item = await store.getItem(req.agent, req.query);
    sendJson(res, item && presentStoreItem(item));
  });

  router.delete('/store/items', async (req, res) => {
    await store.deleteItem(req.agent, req.body);
    res.status(204).end();
  });

  router.post('/store/items/search', async (req, res) => {
    sendJson(res, { items: (await store.searchItems(req.agent, req.body)).map(presentStoreItem) });
  });

  router.post('/store/namespaces', async (req, res) => {
    sendJson(res, { namespaces: await store.listNamespaces(req.agent, req.body) });
  });

  return router;
}
